package fuzz

import (
	"bytes"
	"testing"

	"github.com/memrl/memrl/cluster"
)

// nodesSeeds are hand-written starting points for FuzzParseNodes; files in
// testdata/fuzz/FuzzParseNodes hold more.
var nodesSeeds = []string{
	cluster.NodesHeader + "\nn0\t127.0.0.1:7000\t0\t0\nn1\t127.0.0.1:7001\t1\t42\n",
	string(cluster.FormatNodes([]cluster.Node{{ID: "a", Addr: "localhost:1", Shard: 0}, {ID: "b-2", Addr: "[::1]:2", Shard: 0, PID: 7}})),
	cluster.NodesHeader + "\n# comment\n\nn0\t127.0.0.1:7000\t0\t0\r\n# sum 00000000\n",
	cluster.NodesHeader + "\nn0\t127.0.0.1:7000\t1\t0\n",
}

func FuzzParseNodes(f *testing.F) {
	for _, s := range nodesSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		nodes, err := cluster.ParseNodes(in)
		if err != nil {
			if nodes != nil {
				t.Fatal("nodes returned with an error")
			}
			return
		}
		// An accepted file names valid, unique nodes in dense shards
		// with a raft address each.
		ids := map[string]bool{}
		seen := make([]bool, cluster.Shards(nodes))
		for _, n := range nodes {
			if cluster.ValidID(n.ID) != nil || ids[n.ID] || cluster.RaftAddr(n.Addr) == "" || n.Shard < 0 || n.PID < 0 {
				t.Fatalf("accepted a bad node %+v", n)
			}
			ids[n.ID] = true
			seen[n.Shard] = true
		}
		for s, ok := range seen {
			if !ok {
				t.Fatalf("shard %d empty", s)
			}
		}
		// Writing what was read and reading it again gives the same
		// nodes, and the written form is a fixed point.
		out := cluster.FormatNodes(nodes)
		again, err := cluster.ParseNodes(out)
		if err != nil {
			t.Fatalf("re-reading the formatted file: %v\n%s", err, out)
		}
		if len(again) != len(nodes) {
			t.Fatalf("round trip: %d nodes, then %d", len(nodes), len(again))
		}
		for i := range nodes {
			if nodes[i] != again[i] {
				t.Fatalf("round trip: %+v became %+v", nodes[i], again[i])
			}
		}
		if !bytes.Equal(cluster.FormatNodes(again), out) {
			t.Fatal("formatting is not a fixed point")
		}
	})
}
