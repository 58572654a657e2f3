package cluster

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// NodesHeader is the first line of a nodes file, version 1.
const NodesHeader = "# memrl nodes v1"

// NodesFile is the nodes file's name in a cluster's folder.
const NodesFile = "nodes.tsv"

// Node is one line of the nodes file.
type Node struct {
	ID    string // [a-z0-9-]{1,40}, unique
	Addr  string // client address, host:port, unique
	Shard int    // 0-based
	PID   int    // process id, 0 if unknown
}

// HexID is HexID(n.ID).
func (n Node) HexID() string { return HexID(n.ID) }

// ParseNodes parses a nodes file (see the package documentation). Every
// error names the line at fault. It checks that ids and addresses are
// unique and that the shards are numbered 0..S-1 with none empty.
func ParseNodes(data []byte) ([]Node, error) {
	lines, err := readFramed(data, NodesHeader, NodesFile)
	if err != nil {
		return nil, err
	}
	var nodes []Node
	ids := map[string]int{}
	addrs := map[string]int{}
	maxShard := -1
	for _, l := range lines {
		f := strings.Split(l.text, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("%s, line %d: want 4 tab-separated fields (node-id, client-addr, shard, pid), got %d", NodesFile, l.n, len(f))
		}
		n := Node{ID: f[0], Addr: f[1]}
		if err := ValidID(n.ID); err != nil {
			return nil, fmt.Errorf("%s, line %d: node id %q: %v", NodesFile, l.n, truncateLine(n.ID), err)
		}
		if _, port, err := splitAddr(n.Addr); err != nil {
			return nil, fmt.Errorf("%s, line %d: %v", NodesFile, l.n, err)
		} else if port+RaftPortOffset > 65535 {
			return nil, fmt.Errorf("%s, line %d: port %d leaves no raft port (port+%d must be at most 65535)", NodesFile, l.n, port, RaftPortOffset)
		}
		// At most one shard per slot: the slot map holds a shard in 16
		// bits and DefaultSlots gives every shard a slot.
		if n.Shard, err = parseSmallInt(f[2], NumSlots-1); err != nil {
			return nil, fmt.Errorf("%s, line %d: shard: %v", NodesFile, l.n, err)
		}
		if n.PID, err = parseSmallInt(f[3], 1<<31-1); err != nil {
			return nil, fmt.Errorf("%s, line %d: pid: %v", NodesFile, l.n, err)
		}
		if prev, dup := ids[n.ID]; dup {
			return nil, fmt.Errorf("%s, line %d: node id %q already on line %d", NodesFile, l.n, n.ID, prev)
		}
		if prev, dup := addrs[n.Addr]; dup {
			return nil, fmt.Errorf("%s, line %d: address %q already on line %d", NodesFile, l.n, n.Addr, prev)
		}
		ids[n.ID], addrs[n.Addr] = l.n, l.n
		maxShard = max(maxShard, n.Shard)
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%s: no nodes", NodesFile)
	}
	seen := make([]bool, maxShard+1)
	for _, n := range nodes {
		seen[n.Shard] = true
	}
	for s, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("%s: shards are numbered up to %d but shard %d has no node", NodesFile, maxShard, s)
		}
	}
	return nodes, nil
}

// parseSmallInt parses a canonical decimal in [0, limit].
func parseSmallInt(s string, limit int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > limit || strconv.Itoa(n) != s {
		return 0, fmt.Errorf("%q is not a number in 0..%d", truncateLine(s), limit)
	}
	return n, nil
}

// FormatNodes returns nodes as a nodes file, with its header and sum line.
func FormatNodes(nodes []Node) []byte {
	var b bytes.Buffer
	b.WriteString("# node-id\tclient-addr\tshard\tpid\n")
	for _, n := range nodes {
		fmt.Fprintf(&b, "%s\t%s\t%d\t%d\n", n.ID, n.Addr, n.Shard, n.PID)
	}
	return frame(NodesHeader, b.Bytes())
}

// ReadNodes reads and parses the nodes file at path.
func ReadNodes(path string) ([]Node, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	nodes, err := ParseNodes(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return nodes, nil
}

// WriteNodes replaces the nodes file at path atomically (a reader sees the
// old file or the new one, never a mix). It refuses nodes that ParseNodes
// would refuse, so a written file always reads back.
func WriteNodes(path string, nodes []Node) error {
	data := FormatNodes(nodes)
	if _, err := ParseNodes(data); err != nil {
		return err
	}
	return writeFileAtomic(path, data)
}

// Shards returns the number of shards the nodes name (the highest shard
// plus one).
func Shards(nodes []Node) int {
	s := 0
	for _, n := range nodes {
		s = max(s, n.Shard+1)
	}
	return s
}
