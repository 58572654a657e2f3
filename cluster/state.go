package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Topology is one reading of the nodes file and the slot map. It is never
// modified once built; Reload replaces it whole.
type Topology struct {
	Nodes  []Node
	Shards int
	Slots  *SlotMap
	byID   map[string]int // node id -> index in Nodes
}

// Node returns the node named id.
func (t *Topology) Node(id string) (Node, bool) {
	i, ok := t.byID[id]
	if !ok {
		return Node{}, false
	}
	return t.Nodes[i], true
}

// ShardNodes returns the nodes of shard, in nodes-file order.
func (t *Topology) ShardNodes(shard int) []Node {
	var out []Node
	for _, n := range t.Nodes {
		if n.Shard == shard {
			out = append(out, n)
		}
	}
	return out
}

func newTopology(nodes []Node, slots *SlotMap) *Topology {
	t := &Topology{Nodes: nodes, Shards: Shards(nodes), Slots: slots, byID: make(map[string]int, len(nodes))}
	for i, n := range nodes {
		t.byID[n.ID] = i
	}
	return t
}

// LoadTopology reads the nodes file at nodesPath and the slot map beside
// it (slots.tsv, or the default map if there is none).
func LoadTopology(nodesPath string) (*Topology, error) {
	nodes, err := ReadNodes(nodesPath)
	if err != nil {
		return nil, err
	}
	slots, err := ReadSlots(filepath.Join(filepath.Dir(nodesPath), SlotsFile), Shards(nodes))
	if err != nil {
		return nil, err
	}
	return newTopology(nodes, slots), nil
}

// Config configures a State.
type Config struct {
	// NodesPath is the nodes file.
	NodesPath string
	// Self is this node's id; it must be in the nodes file.
	Self string
	// Leader reports the current leader of this node's own shard (from the
	// replication layer); ok is false while there is none. Nil means this
	// node always leads its shard (a shard of one node, no replication).
	Leader func() (id string, ok bool)
	// PollInterval is how often other shards' nodes are asked ROLE;
	// default 250ms.
	PollInterval time.Duration
	// PollTimeout bounds one ROLE exchange; default 200ms.
	PollTimeout time.Duration
	// Auth is what this node sends to other nodes' client ports (the ROLE
	// polls, MEM.LIST CLUSTER's questions): with passwords set, a node
	// that sends none gets NOAUTH and never learns other shards' leaders.
	Auth Auth
}

// State is what a node knows of its cluster: the topology and the leader of
// every shard. Its methods are safe for concurrent use.
type State struct {
	cfg  Config
	self string

	topo atomic.Pointer[Topology]
	// leaders holds, per shard, the id of the node that last said ROLE
	// master, or "" if none did in the last round. Replaced whole by each
	// poll round; this node's own shard is not in it (cfg.Leader answers).
	leaders atomic.Pointer[[]string]

	reloadMu sync.Mutex // serialises Reload
}

// NewState loads the topology and checks that cfg.Self is in it. Call Run
// to learn other shards' leaders.
func NewState(cfg Config) (*State, error) {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 250 * time.Millisecond
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = 200 * time.Millisecond
	}
	t, err := LoadTopology(cfg.NodesPath)
	if err != nil {
		return nil, err
	}
	if _, ok := t.Node(cfg.Self); !ok {
		return nil, fmt.Errorf("cluster: node %q is not in %s", cfg.Self, cfg.NodesPath)
	}
	s := &State{cfg: cfg, self: cfg.Self}
	s.topo.Store(t)
	empty := make([]string, t.Shards)
	s.leaders.Store(&empty)
	return s, nil
}

// Auth returns what this node sends to other nodes' client ports
// (Config.Auth).
func (s *State) Auth() Auth { return s.cfg.Auth }

// Topology returns the current topology (do not modify it).
func (s *State) Topology() *Topology { return s.topo.Load() }

// Self returns this node as the current topology names it.
func (s *State) Self() Node {
	n, _ := s.topo.Load().Node(s.self)
	return n
}

// IsLeader reports whether this node leads its shard.
func (s *State) IsLeader() bool {
	id, ok := s.ownLeader()
	return ok && id == s.self
}

func (s *State) ownLeader() (string, bool) {
	if s.cfg.Leader == nil {
		return s.self, true
	}
	return s.cfg.Leader()
}

// Leader returns the current leader of shard, or ok false if it is not
// known (no node of the shard answered ROLE master in the last round, or,
// for this node's own shard, the replication layer knows none).
func (s *State) Leader(shard int) (Node, bool) {
	t := s.topo.Load()
	var id string
	if shard == s.Self().Shard {
		var ok bool
		if id, ok = s.ownLeader(); !ok {
			return Node{}, false
		}
	} else {
		l := *s.leaders.Load()
		if shard < 0 || shard >= len(l) || l[shard] == "" {
			return Node{}, false
		}
		id = l[shard]
	}
	n, ok := t.Node(id)
	if !ok || n.Shard != shard {
		return Node{}, false
	}
	return n, true
}

// Reload reads the nodes file and slot map again (CLUSTER RELOAD). This
// node must still be in it, in the same shard at the same address; on an
// error nothing changes.
func (s *State) Reload() error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	t, err := LoadTopology(s.cfg.NodesPath)
	if err != nil {
		return err
	}
	n, ok := t.Node(s.self)
	if !ok {
		return fmt.Errorf("cluster: node %q is no longer in %s", s.self, s.cfg.NodesPath)
	}
	// This node's raft group and listener are those it started with: a
	// file that moves it to another shard would have the router take it
	// for a member of that shard (and, leading its old group, accept the
	// new shard's writes into the wrong group); another address would
	// send clients where it does not listen. Its pid may change.
	if old := s.Self(); n.Shard != old.Shard || n.Addr != old.Addr {
		return fmt.Errorf("cluster: %s gives node %q shard %d at %s, but it runs as shard %d at %s (restart it to move it)",
			s.cfg.NodesPath, s.self, n.Shard, n.Addr, old.Shard, old.Addr)
	}
	s.topo.Store(t)
	return nil
}

// Run asks the nodes of every other shard ROLE every PollInterval until ctx
// ends, so that Leader knows who leads them.
func (s *State) Run(ctx context.Context) {
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
	for {
		s.PollOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// PollOnce runs one round of ROLE questions (all nodes at once) and
// replaces the leader table with what they answered.
func (s *State) PollOnce(ctx context.Context) {
	t := s.topo.Load()
	own := s.Self().Shard
	next := make([]string, t.Shards)
	var mu sync.Mutex // guards next
	var wg sync.WaitGroup
	for _, n := range t.Nodes {
		if n.Shard == own {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if isMaster(ctx, s.cfg.Auth, n.Addr, s.cfg.PollTimeout) {
				mu.Lock()
				// Two masters in one shard (an old leader that has not yet
				// noticed): keep the first in file order, for stability;
				// the other's writes fail anyway.
				if next[n.Shard] == "" || t.byID[n.ID] < t.byID[next[n.Shard]] {
					next[n.Shard] = n.ID
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	s.leaders.Store(&next)
}

// SetLeaderForTest makes shard's leader id until the next poll round.
func (s *State) SetLeaderForTest(shard int, id string) {
	l := append([]string(nil), *s.leaders.Load()...)
	for len(l) <= shard {
		l = append(l, "")
	}
	l[shard] = id
	s.leaders.Store(&l)
}

// isMaster asks addr ROLE and reports whether it said master.
func isMaster(ctx context.Context, auth Auth, addr string, timeout time.Duration) bool {
	v, err := auth.Do(ctx, addr, timeout, "ROLE")
	if err != nil {
		return false
	}
	a, ok := v.([]any)
	return ok && len(a) > 0 && a[0] == "master"
}
