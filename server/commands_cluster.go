package server

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memrl/memrl/cluster"
)

// The cluster commands: READONLY, READWRITE, ASKING, ROLE and CLUSTER
// SLOTS | SHARDS | NODES | MYID | MYSHARDID | INFO | KEYSLOT |
// COUNTKEYSINSLOT | GETKEYSINSLOT | RELOAD | HELP, in Redis Cluster's
// reply shapes (go-redis ClusterClient and redis-py RedisCluster parse
// them). On a standalone server (no ClusterRouter set) all but ROLE
// answer "ERR This instance has cluster support disabled", as Redis does,
// and ROLE says master; INFO's Cluster section says cluster_enabled:0.
//
// Each shard's "primary" in these replies is its current leader
// (cluster.State.Leader); while a shard has none known, its first node in
// the nodes file stands in, so that every slot has an address a client
// can go to (that node answers MOVED or CLUSTERDOWN until a leader is
// elected). Health is not tracked beyond leadership: every node is
// reported online and connected.

// registerCluster registers the cluster commands and INFO's Cluster
// section.
func (s *Server) registerCluster() {
	s.Register("readonly", 0, cmdReadonly, ReadOnly)
	s.Register("readwrite", 0, cmdReadwrite, ReadOnly)
	s.Register("asking", 0, cmdAsking, ReadOnly)
	s.Register("role", 0, cmdRole, ReadOnly)
	s.Register("cluster", 1, cmdCluster, ReadOnly) // CLUSTER RELOAD and SETSLOT check for a read-only user themselves
	s.registerSetSlot()                            // MEMRL.SETSLOT (commands_setslot.go)
	s.AddInfoSection("Cluster", func() [][2]string {
		return [][2]string{{"cluster_enabled", yesNo01(s.clusterRouter() != nil)}}
	})
}

func yesNo01(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// READONLY: this connection's reads may be served by any node of their
// shard, possibly stale.
func cmdReadonly(c *Ctx, args [][]byte) error {
	if len(args) != 0 {
		return c.WrongArity()
	}
	if c.Server().clusterRouter() == nil {
		return errClusterDisabled
	}
	c.conn.readonly = true
	c.WriteOK()
	return nil
}

// READWRITE: undo READONLY.
func cmdReadwrite(c *Ctx, args [][]byte) error {
	if len(args) != 0 {
		return c.WrongArity()
	}
	if c.Server().clusterRouter() == nil {
		return errClusterDisabled
	}
	c.conn.readonly = false
	c.WriteOK()
	return nil
}

// ASKING: sent by clients before a command that follows an -ASK redirect:
// the next command on the connection is served here if its slot is one
// this node's shard is importing (route.go), though the slot is not yet
// the shard's.
func cmdAsking(c *Ctx, args [][]byte) error {
	if len(args) != 0 {
		return c.WrongArity()
	}
	if c.Server().clusterRouter() == nil {
		return errClusterDisabled
	}
	c.conn.asking = true
	c.WriteOK()
	return nil
}

// ROLE: ["master", offset, [[ip, port, offset] ...replicas]] on the leader
// of its shard (and on a standalone server), ["slave", leader-ip,
// leader-port, state, offset] on the others. memrl has no replication
// offset of Redis's kind; 0 is reported. Other nodes ask it to learn who
// leads a shard (cluster.State.PollOnce).
func cmdRole(c *Ctx, args [][]byte) error {
	if len(args) != 0 {
		return c.WrongArity()
	}
	cr := c.Server().clusterRouter()
	if cr == nil {
		c.WriteArrayHeader(3)
		c.WriteBulkString("master")
		c.WriteInt(0)
		c.WriteArrayHeader(0)
		return nil
	}
	st := cr.State()
	self := st.Self()
	if st.IsLeader() {
		var peers []cluster.Node
		for _, n := range st.Topology().ShardNodes(self.Shard) {
			if n.ID != self.ID {
				peers = append(peers, n)
			}
		}
		c.WriteArrayHeader(3)
		c.WriteBulkString("master")
		c.WriteInt(0)
		c.WriteArrayHeader(len(peers))
		for _, n := range peers {
			host, port := splitHostPort(n.Addr)
			c.WriteArrayHeader(3)
			c.WriteBulkString(host)
			c.WriteBulkString(strconv.Itoa(port))
			c.WriteBulkString("0")
		}
		return nil
	}
	c.WriteArrayHeader(5)
	c.WriteBulkString("slave")
	if l, ok := st.Leader(self.Shard); ok {
		host, port := splitHostPort(l.Addr)
		c.WriteBulkString(host)
		c.WriteInt(int64(port))
		c.WriteBulkString("connected")
	} else {
		c.WriteBulkString("")
		c.WriteInt(0)
		c.WriteBulkString("connecting")
	}
	c.WriteInt(0)
	return nil
}

// splitHostPort splits a nodes-file address (checked when parsed).
func splitHostPort(addr string) (string, int) {
	h, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return h, n
}

// CLUSTER subcommand [args]
func cmdCluster(c *Ctx, args [][]byte) error {
	sub := strings.ToLower(string(args[0]))
	if sub == "help" {
		help := []string{
			"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"SLOTS", "    Return the slot ranges and the nodes serving them.",
			"SHARDS", "    Return each shard's slots and nodes.",
			"NODES", "    Return the cluster configuration as Redis's nodes.conf lines.",
			"MYID", "    Return this node's id.",
			"MYSHARDID", "    Return this node's shard id.",
			"INFO", "    Return the cluster's state.",
			"KEYSLOT <key>", "    Return the hash slot of <key>.",
			"COUNTKEYSINSLOT <slot>", "    Return the number of collections of this node in <slot>.",
			"GETKEYSINSLOT <slot> <count>", "    Return up to <count> collection names of this node in <slot>.",
			"RELOAD", "    Read the nodes file and slots.tsv again.",
			"SETSLOT <slot> MIGRATING|IMPORTING|NODE <shard> | STABLE", "    Set a slot's migration state on this shard (replicated).",
		}
		c.WriteArrayHeader(len(help))
		for _, h := range help {
			c.WriteSimple(h)
		}
		return nil
	}
	cr := c.Server().clusterRouter()
	if cr == nil {
		return errClusterDisabled
	}
	v := newClusterView(cr)
	want := func(n int) error {
		if len(args) != n {
			return errWrongArity("cluster|" + sub)
		}
		return nil
	}
	switch sub {
	case "slots":
		if err := want(1); err != nil {
			return err
		}
		v.writeSlots(c)
	case "shards":
		if err := want(1); err != nil {
			return err
		}
		v.writeShards(c)
	case "nodes":
		if err := want(1); err != nil {
			return err
		}
		c.WriteBulkString(v.nodesText())
	case "myid":
		if err := want(1); err != nil {
			return err
		}
		c.WriteBulkString(v.self.HexID())
	case "myshardid":
		if err := want(1); err != nil {
			return err
		}
		c.WriteBulkString(shardHexID(v.self.Shard))
	case "info":
		if err := want(1); err != nil {
			return err
		}
		c.WriteBulkString(v.infoText())
	case "keyslot":
		if err := want(2); err != nil {
			return err
		}
		c.WriteInt(int64(cluster.HashSlot(args[1])))
	case "countkeysinslot":
		if err := want(2); err != nil {
			return err
		}
		slot, ok := parseSlot(args[1])
		if !ok {
			return NewError("Invalid slot")
		}
		c.WriteInt(int64(len(collectionsInSlot(cr, slot, -1))))
	case "getkeysinslot":
		if err := want(3); err != nil {
			return err
		}
		slot, ok := parseSlot(args[1])
		n, nok := parseInt(args[2])
		if !ok || !nok || n < 0 {
			return NewError("Invalid slot or number of keys")
		}
		keys := collectionsInSlot(cr, slot, int(min(n, 1<<30)))
		c.WriteArrayHeader(len(keys))
		for _, k := range keys {
			c.WriteBulkString(k)
		}
	case "reload":
		if err := want(1); err != nil {
			return err
		}
		if u := c.conn.user; u != nil && u.ReadOnly {
			return errNoPerm(u.Name, "cluster|reload")
		}
		if err := cr.State().Reload(); err != nil {
			return NewError("CLUSTER RELOAD: " + err.Error() + "; the old configuration stays")
		}
		c.WriteOK()
	case "setslot":
		return clusterSetSlot(c, cr, args[1:]) // commands_setslot.go
	default:
		return errUnknownSubcommand(string(args[0]), "cluster")
	}
	return nil
}

// parseSlot parses a slot number in [0, NumSlots).
func parseSlot(b []byte) (int, bool) {
	n, ok := parseInt(b)
	if !ok || n < 0 || n >= cluster.NumSlots {
		return 0, false
	}
	return int(n), true
}

// collectionsInSlot returns this node's collections whose name hashes to
// slot, sorted, at most limit of them (limit < 0: all).
func collectionsInSlot(cr *ClusterRouter, slot, limit int) []string {
	var out []string
	for _, name := range cr.cfg.Collections() {
		if cluster.HashSlot([]byte(name)) == slot {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	if limit >= 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// shardHexID is a shard's 40-hex-digit id (CLUSTER MYSHARDID, SHARDS).
func shardHexID(shard int) string { return cluster.HexID("shard-" + strconv.Itoa(shard)) }

// clusterView is one consistent reading of the cluster for one reply: the
// topology, and each shard's primary (its leader, or its first node while
// it has none known).
type clusterView struct {
	topo    *cluster.Topology
	self    cluster.Node
	primary []cluster.Node // per shard
	led     []bool         // per shard: primary is a known leader
}

func newClusterView(cr *ClusterRouter) *clusterView {
	st := cr.State()
	t := st.Topology()
	if m := cr.SlotStates().Overlay(t.Slots); m != t.Slots { // SETSLOT NODE's owners
		o := *t
		o.Slots = m
		t = &o
	}
	v := &clusterView{topo: t, self: st.Self(), primary: make([]cluster.Node, t.Shards), led: make([]bool, t.Shards)}
	for s := range t.Shards {
		if l, ok := st.Leader(s); ok {
			v.primary[s], v.led[s] = l, true
		} else {
			v.primary[s] = t.ShardNodes(s)[0]
		}
	}
	return v
}

// replicas returns the nodes of shard other than its primary.
func (v *clusterView) replicas(shard int) []cluster.Node {
	var out []cluster.Node
	for _, n := range v.topo.ShardNodes(shard) {
		if n.ID != v.primary[shard].ID {
			out = append(out, n)
		}
	}
	return out
}

// CLUSTER SLOTS: one entry per slot range, [first, last, primary,
// replica...], each node [ip, port, id].
func (v *clusterView) writeSlots(c *Ctx) {
	type entry struct {
		r     cluster.SlotRange
		shard int
	}
	var entries []entry
	for s := range v.topo.Shards {
		for _, r := range v.topo.Slots.Ranges(s) {
			entries = append(entries, entry{r, s})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return a.r.First - b.r.First })
	c.WriteArrayHeader(len(entries))
	for _, e := range entries {
		reps := v.replicas(e.shard)
		c.WriteArrayHeader(3 + len(reps))
		c.WriteInt(int64(e.r.First))
		c.WriteInt(int64(e.r.Last))
		for _, n := range append([]cluster.Node{v.primary[e.shard]}, reps...) {
			host, port := splitHostPort(n.Addr)
			c.WriteArrayHeader(3)
			c.WriteBulkString(host)
			c.WriteInt(int64(port))
			c.WriteBulkString(n.HexID())
		}
	}
}

// CLUSTER SHARDS: per shard a map {slots: [first, last, ...], nodes:
// [node map ...]}, each node {id, port, ip, endpoint, role,
// replication-offset, health}.
func (v *clusterView) writeShards(c *Ctx) {
	c.WriteArrayHeader(v.topo.Shards)
	for s := range v.topo.Shards {
		c.WriteArrayHeader(4)
		c.WriteBulkString("slots")
		ranges := v.topo.Slots.Ranges(s)
		c.WriteArrayHeader(2 * len(ranges))
		for _, r := range ranges {
			c.WriteInt(int64(r.First))
			c.WriteInt(int64(r.Last))
		}
		c.WriteBulkString("nodes")
		nodes := append([]cluster.Node{v.primary[s]}, v.replicas(s)...)
		c.WriteArrayHeader(len(nodes))
		for i, n := range nodes {
			host, port := splitHostPort(n.Addr)
			role := "replica"
			if i == 0 {
				role = "master"
			}
			c.WriteArrayHeader(14)
			c.WriteBulkString("id")
			c.WriteBulkString(n.HexID())
			c.WriteBulkString("port")
			c.WriteInt(int64(port))
			c.WriteBulkString("ip")
			c.WriteBulkString(host)
			c.WriteBulkString("endpoint")
			c.WriteBulkString(host)
			c.WriteBulkString("role")
			c.WriteBulkString(role)
			c.WriteBulkString("replication-offset")
			c.WriteInt(0)
			c.WriteBulkString("health")
			c.WriteBulkString("online")
		}
	}
}

// nodesText is CLUSTER NODES: one line per node, "<id> <ip:port@bus-port>
// <flags> <primary-id|-> <ping-sent> <pong-recv> <config-epoch>
// <link-state> <slot ranges (primaries only)>", where the bus port is the
// raft port.
func (v *clusterView) nodesText() string {
	var b strings.Builder
	for _, n := range v.topo.Nodes {
		host, port := splitHostPort(n.Addr)
		primary := v.primary[n.Shard]
		flags, master := "slave", primary.HexID()
		if n.ID == primary.ID {
			flags, master = "master", "-"
		}
		if n.ID == v.self.ID {
			flags = "myself," + flags
		}
		b.WriteString(n.HexID())
		b.WriteByte(' ')
		b.WriteString(net.JoinHostPort(host, strconv.Itoa(port)))
		b.WriteByte('@')
		b.WriteString(strconv.Itoa(port + cluster.RaftPortOffset))
		b.WriteByte(' ')
		b.WriteString(flags)
		b.WriteByte(' ')
		b.WriteString(master)
		b.WriteString(" 0 0 ")
		b.WriteString(strconv.Itoa(n.Shard + 1)) // config epoch: distinct per shard
		b.WriteString(" connected")
		if n.ID == primary.ID {
			for _, r := range v.topo.Slots.Ranges(n.Shard) {
				b.WriteByte(' ')
				b.WriteString(strconv.Itoa(r.First))
				if r.Last != r.First {
					b.WriteByte('-')
					b.WriteString(strconv.Itoa(r.Last))
				}
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// infoText is CLUSTER INFO. A slot whose shard has no known leader counts
// as failed and makes the state "fail".
func (v *clusterView) infoText() string {
	okSlots := 0
	for s := range v.topo.Shards {
		if v.led[s] {
			for _, r := range v.topo.Slots.Ranges(s) {
				okSlots += r.Last - r.First + 1
			}
		}
	}
	state := "ok"
	if okSlots < cluster.NumSlots {
		state = "fail"
	}
	fields := [][2]string{
		{"cluster_state", state},
		{"cluster_slots_assigned", strconv.Itoa(cluster.NumSlots)},
		{"cluster_slots_ok", strconv.Itoa(okSlots)},
		{"cluster_slots_pfail", "0"},
		{"cluster_slots_fail", strconv.Itoa(cluster.NumSlots - okSlots)},
		{"cluster_known_nodes", strconv.Itoa(len(v.topo.Nodes))},
		{"cluster_size", strconv.Itoa(v.topo.Shards)},
		{"cluster_current_epoch", strconv.Itoa(v.topo.Shards)},
		{"cluster_my_epoch", strconv.Itoa(v.self.Shard + 1)},
		{"cluster_stats_messages_sent", "0"},
		{"cluster_stats_messages_received", "0"},
		{"total_cluster_links_buffer_limit_exceeded", "0"},
	}
	var b strings.Builder
	for _, f := range fields {
		b.WriteString(f[0])
		b.WriteByte(':')
		b.WriteString(f[1])
		b.WriteString("\r\n")
	}
	return b.String()
}

// listClusterTimeout bounds MEM.LIST CLUSTER's question to each shard.
const listClusterTimeout = 2 * time.Second

// MEM.LIST CLUSTER: the union of every shard's collections, sorted. The
// leader of each shard is asked MEM.LIST (this node answers for its own
// shard if it leads it); a shard without a leader gives CLUSTERDOWN and
// an unreachable one an error naming it, as a partial list would be
// silently wrong. local lists this node's collections.
func listCluster(c *Ctx, local func() []string) error {
	cr := c.Server().clusterRouter()
	if cr == nil {
		return errClusterDisabled
	}
	if c.conn.inExec {
		// It would hold the transaction lock, which stops every
		// command of this node, across network round trips.
		return NewError("MEM.LIST CLUSTER cannot run inside MULTI")
	}
	st := cr.State()
	t := st.Topology()
	self := st.Self()
	var names []string
	// The questions go over the network: let go of the transaction lock
	// meanwhile, as for any wait (tx.go).
	paused := c.conn.pauseShared()
	defer c.conn.resumeShared(paused)
	for s := range t.Shards {
		l, ok := st.Leader(s)
		if !ok {
			return &ReplyError{Code: "CLUSTERDOWN", Msg: "shard " + strconv.Itoa(s) + " has no leader now; retry"}
		}
		if l.ID == self.ID {
			names = append(names, local()...)
			continue
		}
		ctx, cancel := context.WithTimeout(c.Context(), listClusterTimeout)
		v, err := st.Auth().Do(ctx, l.Addr, listClusterTimeout, "MEM.LIST")
		cancel()
		list, isList := v.([]any)
		if err != nil || !isList {
			if err == nil {
				err = errSyntax
			}
			return NewError("MEM.LIST CLUSTER: shard " + strconv.Itoa(s) + " (node " + l.ID + ", " + l.Addr + "): " + err.Error())
		}
		for _, n := range list {
			if name, ok := n.(string); ok {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	c.WriteArrayHeader(len(names))
	for _, n := range names {
		c.WriteBulkString(n)
	}
	return nil
}
