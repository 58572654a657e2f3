package server

import (
	"bytes"
	"errors"
	"testing"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/fuzz/corpus"
)

// maddArgsSeeds are argument lists of MEM.MADD (after the collection
// name), joined by '\n' as FuzzMAddArgs splits them.
func maddArgsSeeds() map[string]corpus.Seed {
	join := func(args ...string) corpus.Seed { return corpus.Seed{[]byte(joinArgs(args...))} }
	return map[string]corpus.Seed{
		"two":           join("FP32", fp32(1, 2, 3, 4), "VALUES", "4", "1", "0", "0", "0"),
		"options":       join("VALUES", "4", "1", "1", "1", "1", "ID", "900", "Q", "0.5", "PAYLOAD", "x", "FP32", fp32(0, 1, 0, 0), "PAYLOAD", "VALUES"),
		"id-twice":      join("VALUES", "4", "1", "1", "1", "1", "ID", "901", "VALUES", "4", "1", "1", "1", "1", "ID", "901"),
		"bad-second":    join("VALUES", "4", "1", "1", "1", "1", "FP32", fp32(1, 2, 3)),
		"nan-third":     join("VALUES", "4", "1", "1", "1", "1", "VALUES", "4", "1", "1", "1", "1", "VALUES", "4", "nan", "1", "1", "1"),
		"unknown":       join("VALUES", "4", "1", "1", "1", "1", "BOGUS", "FP32", fp32(1, 2, 3, 4)),
		"no-vector":     join("ID", "3", "VALUES", "4", "1", "1", "1", "1"),
		"keyword-case":  join("fp32", fp32(1, 2, 3, 4), "values", "4", "1", "1", "1", "1", "id", "902"),
		"payload-empty": join("VALUES", "4", "1", "1", "1", "1", "PAYLOAD", ""),
	}
}

func TestFuzzSeedsMAddArgs(t *testing.T) {
	corpus.Check(t, "FuzzMAddArgs", maddArgsSeeds())
}

// FuzzMAddArgs parses arbitrary argument lists ('\n'-separated) as
// MEM.MADD does after the collection name (parseMemory until none is
// left) and hands what parses to AddBatch on collections of dimension 4,
// as the command does. Invariants:
//
//   - no parser panics, and every memory parsed starts at an FP32 or
//     VALUES keyword;
//   - a batch is added whole or not at all: on success the collection
//     holds every memory of it, with the ids returned, the vector given
//     (as stored) and the payload given; on failure its count is
//     unchanged, and an error from one memory names a position in the
//     batch.
func FuzzMAddArgs(f *testing.F) {
	f.Add([]byte("VALUES\n4\n1\n2\n3\n4\nVALUES\n4\n1\n1\n1\n1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		args := bytes.Split(data, []byte("\n"))
		a := argList{args: args}
		var reqs []engine.AddRequest
		for a.more() {
			start := a.i
			req, err := parseMemory(&a, "MEM.MADD", true)
			if err != nil {
				return // the command replies "memory n: …" and adds nothing
			}
			if k := string(bytes.ToUpper(args[start])); k != "FP32" && k != "VALUES" {
				t.Fatalf("memory %d parsed from %q, not a vector keyword", len(reqs)+1, args[start])
			}
			if a.i <= start {
				t.Fatalf("memory %d consumed no argument", len(reqs)+1)
			}
			reqs = append(reqs, req)
		}
		for _, c := range fuzzColls(t) {
			before, err := c.Count()
			if err != nil {
				t.Fatal(err)
			}
			ids, err := c.AddBatch(reqs)
			fuzzAdds += len(reqs)
			after, _ := c.Count()
			if err != nil {
				var be *engine.BatchError
				if errors.As(err, &be) && (be.Index < 0 || be.Index >= len(reqs)) {
					t.Fatalf("%s: error names memory %d of a batch of %d", c.Name(), be.Index+1, len(reqs))
				}
				if after != before {
					t.Fatalf("%s: a refused batch changed the count from %d to %d: %v", c.Name(), before, after, err)
				}
				continue
			}
			if len(ids) != len(reqs) || after != before+len(reqs) {
				t.Fatalf("%s: batch of %d gave %d ids, count %d -> %d", c.Name(), len(reqs), len(ids), before, after)
			}
			for i, id := range ids {
				m, err := c.Get(id)
				if err != nil {
					t.Fatalf("%s: get of added %d: %v", c.Name(), id, err)
				}
				if len(m.Vector) != 4 || !acceptable(c, reqs[i].Vector) || !bytes.Equal(m.Payload, reqs[i].Payload) {
					t.Fatalf("%s: memory %d stored as %v %q from %v %q", c.Name(), id, m.Vector, m.Payload, reqs[i].Vector, reqs[i].Payload)
				}
				if reqs[i].HasID && id != reqs[i].ID {
					t.Fatalf("%s: memory given ID %d got %d", c.Name(), reqs[i].ID, id)
				}
			}
			if _, err := c.Delete(ids); err != nil {
				t.Fatalf("%s: delete: %v", c.Name(), err)
			}
		}
	})
}
