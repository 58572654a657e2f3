package fuzz

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/memrl/memrl/fuzz/corpus"
)

// respArray encodes args as a RESP array of bulk strings, as clients send
// commands.
func respArray(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

func fp32(v ...float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return string(b)
}

// readCommandSeeds are generated frames that the hand-written seeds of
// testdata/fuzz/FuzzReadCommand do not cover: real MEM.* commands as a
// client encodes them, a bulk string longer than the reader's 16 KiB
// buffer, empty bulks, and pipelines mixing inline and RESP commands.
func readCommandSeeds() map[string]corpus.Seed {
	seed := func(s string) corpus.Seed { return corpus.Seed{[]byte(s)} }
	add := respArray("MEM.ADD", "plans", "FP32", fp32(0.5, -1, 3e-3, 2), "ID", "42", "Q", "0.25", "PAYLOAD", "{\"plan\":\"a\"}")
	retrieve := respArray("MEM.RETRIEVE", "plans", "VALUES", "4", "1", "0", "-0.5", "2e-3", "K1", "20", "K2", "5", "LAMBDA", "0.5", "WITHPAYLOAD")
	return map[string]corpus.Seed{
		"mem-add":        seed(add),
		"mem-retrieve":   seed(retrieve),
		"mem-pipeline":   seed(add + retrieve + respArray("MEM.REWARD", "plans", "1", "42", "NEXTQ", "0.5") + "MEM.GET plans 42\r\n"),
		"inline-mem":     seed("MEM.RETRIEVE plans VALUES 4 1 0 \"-0.5\" '2e-3' K2 3\r\nMEM.INFO plans\n"),
		"bulk-over-16k":  seed(respArray("ECHO", strings.Repeat("abcdefgh", 2100))),
		"empty-bulks":    seed(respArray("ECHO", "") + respArray("", "", "")),
		"inline-escapes": seed("SET \"\\x00\\xff\\t\\r\\n\\\\\\a\\b\" \"\"\r\n"),
	}
}

func TestFuzzSeedsReadCommand(t *testing.T) {
	corpus.Check(t, "FuzzReadCommand", readCommandSeeds())
}
