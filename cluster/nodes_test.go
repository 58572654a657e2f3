package cluster

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func sampleNodes() []Node {
	return []Node{
		{ID: "n0", Addr: "127.0.0.1:7000", Shard: 0, PID: 11},
		{ID: "n1", Addr: "127.0.0.1:7001", Shard: 1, PID: 12},
		{ID: "n2", Addr: "127.0.0.1:7002", Shard: 0, PID: 0},
	}
}

func TestNodesRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), NodesFile)
	if err := WriteNodes(path, sampleNodes()); err != nil {
		t.Fatal(err)
	}
	got, err := ReadNodes(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2] != sampleNodes()[2] || got[0] != sampleNodes()[0] {
		t.Fatalf("read back %+v", got)
	}
	if Shards(got) != 2 {
		t.Fatalf("Shards = %d", Shards(got))
	}
}

// A hand-written file without a sum line is accepted; comments and blank
// lines are skipped.
func TestParseNodesHandWritten(t *testing.T) {
	src := NodesHeader + "\n# a comment\n\nn0\t127.0.0.1:7000\t0\t0\r\n"
	nodes, err := ParseNodes([]byte(src))
	if err != nil || len(nodes) != 1 || nodes[0].ID != "n0" {
		t.Fatalf("%v %+v", err, nodes)
	}
}

func TestParseNodesErrorsNameTheLine(t *testing.T) {
	h := NodesHeader + "\n"
	ok := "n0\t127.0.0.1:7000\t0\t0\n"
	for _, tc := range []struct{ src, want string }{
		{"", "line 1: want the version header"},
		{"# memrl nodes v2\n" + ok, "line 1: want the version header"},
		{h, "no nodes"},
		{h + "n0 127.0.0.1:7000 0 0\n", "line 2: want 4 tab-separated fields"},
		{h + ok + "N1\t127.0.0.1:7001\t0\t0\n", "line 3: node id"},
		{h + ok + strings.Repeat("a", 41) + "\t127.0.0.1:7001\t0\t0\n", "line 3: node id"},
		{h + ok + "n1\t127.0.0.1\t0\t0\n", "line 3: "},
		{h + ok + "n1\t:7001\t0\t0\n", "line 3: address \":7001\" has no host"},
		{h + ok + "n1\t127.0.0.1:0\t0\t0\n", "line 3: address"},
		{h + ok + "n1\t127.0.0.1:60000\t0\t0\n", "line 3: port 60000 leaves no raft port"},
		{h + ok + "n1\t127.0.0.1:7001\t-1\t0\n", "line 3: shard"},
		{h + ok + "n1\t127.0.0.1:7001\t01\t0\n", "line 3: shard"},
		{h + ok + "n1\t127.0.0.1:7001\t0\tx\n", "line 3: pid"},
		{h + ok + "n0\t127.0.0.1:7001\t0\t0\n", "line 3: node id \"n0\" already on line 2"},
		{h + ok + "n1\t127.0.0.1:7000\t0\t0\n", "line 3: address \"127.0.0.1:7000\" already on line 2"},
		{h + ok + "n1\t127.0.0.1:7001\t2\t0\n", "shard 1 has no node"},
		{h + "# sum 00000000\n" + ok, "sum line must be the last line"},
	} {
		_, err := ParseNodes([]byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseNodes(%q) = %v, want an error containing %q", tc.src, err, tc.want)
		}
	}
}

// Every byte of a written file is covered by its sum: flipping any one
// makes the file refused (or, for a flip inside the sum line itself,
// refused as a bad or mismatched sum), never read differently.
func TestNodesFileCorruptionDetected(t *testing.T) {
	good := FormatNodes(sampleNodes())
	want, _ := ParseNodes(good)
	for i := range good {
		bad := append([]byte(nil), good...)
		bad[i] ^= 0x01
		got, err := ParseNodes(bad)
		if err != nil {
			continue
		}
		// A flip that turns the sum line into a plain comment or hides
		// it cannot pass unnoticed with changed content.
		if len(got) != len(want) {
			t.Fatalf("flip at %d accepted with %d nodes", i, len(got))
		}
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("flip at byte %d (%q) read as %+v", i, good[i], got[j])
			}
		}
	}
	// Truncation.
	for n := 1; n < len(good); n++ {
		if got, err := ParseNodes(good[:n]); err == nil && len(got) == len(want) {
			for j := range got {
				if got[j] != want[j] {
					t.Fatalf("truncated to %d bytes read as %+v", n, got)
				}
			}
		}
	}
}

func TestWriteNodesRefusesInvalid(t *testing.T) {
	path := filepath.Join(t.TempDir(), NodesFile)
	if err := WriteNodes(path, []Node{{ID: "BAD", Addr: "127.0.0.1:1", Shard: 0}}); err == nil {
		t.Fatal("wrote an invalid node")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("a refused write left a file")
	}
}

func TestSlotsFile(t *testing.T) {
	m := DefaultSlots(2)
	m[0], m[16383] = 1, 0
	data := FormatSlots(m, 2)
	got, err := ParseSlots(data, 2)
	if err != nil || *got != *m {
		t.Fatalf("round trip: %v", err)
	}
	dir := t.TempDir()
	if d, err := ReadSlots(filepath.Join(dir, SlotsFile), 2); err != nil || *d != *DefaultSlots(2) {
		t.Fatalf("missing file: %v", err)
	}
	if err := WriteSlots(filepath.Join(dir, SlotsFile), m, 2); err != nil {
		t.Fatal(err)
	}
	if r, err := ReadSlots(filepath.Join(dir, SlotsFile), 2); err != nil || *r != *m {
		t.Fatalf("read back: %v", err)
	}
	h := SlotsHeader + "\n"
	for _, tc := range []struct{ src, want string }{
		{h + "0\t16383\t0\n", ""},
		{h + "0\t8191\t0\n", "slot 8192 is given to no shard"},
		{h + "0\t8191\t0\n8000\t16383\t1\n", "line 3: slot 8000 already given on line 2"},
		{h + "0\t16383\t2\n", "line 2: shard"},
		{h + "5\t4\t0\n", "line 2: want slots first <= last"},
		{h + "0\t16384\t0\n", "line 2: want slots"},
		{h + "0 16383 0\n", "line 2: want 3 tab-separated fields"},
	} {
		_, err := ParseSlots([]byte(tc.src), 2)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.src, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSlots(%q) = %v, want %q", tc.src, err, tc.want)
		}
	}
	bad := append([]byte(nil), data...)
	bad[len(SlotsHeader)+40] ^= 1
	if _, err := ParseSlots(bad, 2); err == nil {
		t.Fatal("a damaged slots file was accepted")
	}
}

// As for the nodes file: no single flipped bit of a written slots file
// is read as a different map.
func TestSlotsFileCorruptionDetected(t *testing.T) {
	m := DefaultSlots(3)
	m[100], m[9000] = 2, 0
	good := FormatSlots(m, 3)
	for i := range good {
		for bit := range 8 {
			bad := append([]byte(nil), good...)
			bad[i] ^= 1 << bit
			if got, err := ParseSlots(bad, 3); err == nil && *got != *m {
				t.Fatalf("flip of bit %d at byte %d read as a different map", bit, i)
			}
		}
	}
}

// A nodes file may name at most NumSlots shards: the slot map stores a
// shard in 16 bits and gives each shard at least one slot, so more shards
// would leave some without slots (DefaultSlots' REQUIRES) and, past
// 65,535, route slots to the wrong shard.
func TestParseNodesAtMostOneShardPerSlot(t *testing.T) {
	mk := func(shards int) []Node {
		nodes := make([]Node, shards)
		for s := range nodes {
			nodes[s] = Node{ID: "n" + strconv.Itoa(s), Addr: "127.0.0.1:" + strconv.Itoa(20000+s), Shard: s}
		}
		return nodes
	}
	if _, err := ParseNodes(FormatNodes(mk(NumSlots))); err != nil {
		t.Fatalf("%d shards refused: %v", NumSlots, err)
	}
	_, err := ParseNodes(FormatNodes(mk(NumSlots + 1)))
	if err == nil || !strings.Contains(err.Error(), "line ") {
		t.Fatalf("%d shards: err = %v, want an error naming the line", NumSlots+1, err)
	}
}
