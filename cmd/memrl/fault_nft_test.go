package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// nftPartition cuts one node's raft traffic with an nftables table of its
// own (named after this process, so parallel runs do not meet). Each node
// runs as its own uid, because on loopback a node's outgoing connections
// differ from its peers' only by the owner of their socket.
type nftPartition struct {
	t     *testing.T
	table string
}

// newNftPartition returns a partitioner, or nil when this process is not
// root or nft is missing or refuses (the partition nemesis is then
// skipped, not the test). The table is deleted when the test ends.
func newNftPartition(t *testing.T) *nftPartition {
	if os.Geteuid() != 0 {
		return nil
	}
	if _, err := exec.LookPath("nft"); err != nil {
		return nil
	}
	p := &nftPartition{t: t, table: fmt.Sprintf("memrl_fault_%d", os.Getpid())}
	if err := p.nft("add table inet " + p.table); err != nil {
		t.Logf("nft refuses (%v): partition nemesis skipped", err)
		return nil
	}
	t.Cleanup(func() { p.nft("delete table inet " + p.table) })
	if err := p.nft("add chain inet " + p.table + " out { type filter hook output priority 0 ; policy accept ; }"); err != nil {
		t.Logf("nft refuses (%v): partition nemesis skipped", err)
		return nil
	}
	return p
}

// nft runs one nft command.
func (p *nftPartition) nft(cmd string) error {
	out, err := exec.Command("nft", strings.Fields(cmd)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("nft %s: %v: %s", cmd, err, out)
	}
	return nil
}

// isolate drops every raft packet n sends (by its uid) and every packet to
// n's raft port; client ports stay open, so n still answers clients.
func (p *nftPartition) isolate(n *faultNode, nodes []*faultNode) {
	var ports []string
	for _, o := range nodes {
		ports = append(ports, fmt.Sprint(o.raftPort))
	}
	for _, rule := range []string{
		fmt.Sprintf("add rule inet %s out meta skuid %d tcp dport { %s } drop", p.table, n.uid, strings.Join(ports, ", ")),
		fmt.Sprintf("add rule inet %s out tcp dport %d drop", p.table, n.raftPort),
	} {
		if err := p.nft(rule); err != nil {
			p.t.Fatal(err)
		}
	}
}

// heal removes the partition's rules.
func (p *nftPartition) heal() {
	if err := p.nft("flush chain inet " + p.table + " out"); err != nil {
		p.t.Fatal(err)
	}
}
