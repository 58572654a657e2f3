package replica

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/memrl/memrl/cluster"
	"github.com/memrl/memrl/server"
)

// RAFT.* commands (docs/PROTOCOL.md "Replication").
//
//	RAFT.ADD node-id client-addr [raft-addr]
//	                               add a voter (leader only); its raft
//	                               address is raft-addr, by default
//	                               RaftAddr(client-addr)
//	RAFT.REMOVE node-id            remove a server (leader only)
//	RAFT.STATUS                    this node's raft state, a flat map
//	RAFT.SNAPSHOT [KEEP n]         take a raft snapshot now and compact
//	                               the log behind it, keeping n entries
//	                               (default the configured TrailingLogs)
//	RAFT.MAINTAIN                  expire and prune now (what the leader
//	                               proposes every MaintainInterval)
//
// ADD, REMOVE, STATUS and SNAPSHOT act on this node's raft instance and are Local
// (never proposed as entries; membership changes are raft's own
// configuration entries). MAINTAIN is an ordinary replicated command.

// errInTransaction: the commands that wait for raft cannot run inside
// EXEC, which holds the transaction lock that raft's FSM goroutine may
// need to apply a transaction entry.
func errInTransaction(name string) error {
	return server.NewError(name + " cannot run inside MULTI/EXEC (it waits for raft, which may be waiting for the transaction); send it on its own")
}

// errMembershipArgs: RAFT.ADD's client address must be host:port.
var errMembershipArgs = server.NewError("RAFT.ADD wants node-id host:port [raft-host:port] (the new node's client address, and its raft address if not port+10000)")

// errMembershipID: RAFT.ADD's node id must be a valid node id
// (cluster.ValidID).
var errMembershipID = server.NewError("RAFT.ADD: the node id must be 1 to 40 characters of a-z, 0-9 and '-' (as in nodes.tsv)")

// errNotMember: RAFT.REMOVE names a node that is not in the group.
var errNotMember = server.NewError("RAFT.REMOVE: the node is not a member of this shard's group; nothing was changed")

func (n *Node) registerCommands(s *server.Server) {
	s.Register("RAFT.ADD", 2, n.cmdAdd, server.Local)
	s.Register("RAFT.REMOVE", 1, n.cmdRemove, server.Local)
	s.Register("RAFT.STATUS", 0, n.cmdStatus, server.ReadOnly)
	s.Register("RAFT.SNAPSHOT", 0, n.cmdSnapshot, server.Local)
	s.Register("RAFT.MAINTAIN", 0, n.cmdMaintain)
	s.AddInfoSection("Replication", n.infoSection)
	n.registerMoveCommands(s) // move_delta.go
}

// infoSection is INFO replication: Redis's role (master for the shard's
// leader, slave otherwise) and the raft state behind it.
func (n *Node) infoSection() [][2]string {
	role := "slave"
	if n.IsLeader() {
		role = "master"
	}
	leader, _ := n.Leader()
	return [][2]string{
		{"role", role},
		{"raft_node_id", n.cfg.ID},
		{"raft_state", roleName(n.raft.State())},
		{"raft_leader_id", leader},
		{"raft_applied_index", strconv.FormatUint(n.AppliedIndex(), 10)},
	}
}

// RaftAddr returns the raft address of a node whose client address is
// clientAddr: cluster.RaftAddr (the same host, port + 10000, as Redis's
// cluster bus), or "" if clientAddr has no such address.
func RaftAddr(clientAddr string) string { return cluster.RaftAddr(clientAddr) }

// RAFT.ADD node-id client-addr [raft-addr]
func (n *Node) cmdAdd(c *server.Ctx, args [][]byte) error {
	if len(args) > 3 {
		return c.WrongArity()
	}
	if c.InTransaction() {
		return errInTransaction("RAFT.ADD")
	}
	addr := RaftAddr(string(args[1]))
	if len(args) == 3 {
		if _, _, err := splitHostPort(string(args[2])); err != nil {
			return errMembershipArgs
		}
		addr = string(args[2])
	}
	if addr == "" {
		return errMembershipArgs
	}
	// The id joins the raft configuration of every replica for good, and
	// names the node's folder and its nodes-file line: it must be one a
	// nodes file accepts.
	if cluster.ValidID(string(args[0])) != nil {
		return errMembershipID
	}
	if !n.IsLeader() {
		return n.notLeader()
	}
	var err, probeErr error
	// The probe goes over the network, and the commit may wait for an
	// EXEC entry's application, which takes the transaction lock
	// exclusively: neither holds it.
	c.WithoutTxLock(func() {
		if probeErr = probeJoiner(c.Context(), n.cfg.ClientAuth, string(args[0]), string(args[1])); probeErr != nil {
			return
		}
		err = n.raft.AddVoter(raft.ServerID(args[0]), raft.ServerAddress(addr), 0, 10*time.Second).Error()
	})
	if probeErr != nil {
		return server.NewError("RAFT.ADD: " + probeErr.Error() + "; nothing was changed (start the node first, with --cluster-join)")
	}
	if err != nil {
		return server.NewError("RAFT.ADD: " + err.Error())
	}
	c.WriteOK()
	return nil
}

// joinProbeTimeout bounds RAFT.ADD's question to the joining node.
const joinProbeTimeout = 2 * time.Second

// probeJoiner returns nil if the node at clientAddr answers RAFT.STATUS
// with node_id id. RAFT.ADD asks before adding a voter because a voter
// counts towards the quorum from the moment its configuration entry is
// appended: a voter that is not running (a mistyped address or id) costs
// the group a vote for good, and takes a one-node group down at once.
func probeJoiner(ctx context.Context, auth cluster.Auth, id, clientAddr string) error {
	v, err := auth.Do(ctx, clientAddr, joinProbeTimeout, "RAFT.STATUS")
	if err != nil {
		return fmt.Errorf("the node at %s does not answer RAFT.STATUS (%v)", clientAddr, err)
	}
	a, _ := v.([]any)
	for i := 0; i+1 < len(a); i += 2 {
		if a[i] == "node_id" {
			if got, _ := a[i+1].(string); got != id {
				return fmt.Errorf("the node at %s is %q, not %q", clientAddr, got, id)
			}
			return nil
		}
	}
	return fmt.Errorf("the node at %s does not say its node_id in RAFT.STATUS", clientAddr)
}

// RAFT.REMOVE node-id
func (n *Node) cmdRemove(c *server.Ctx, args [][]byte) error {
	if len(args) != 1 {
		return c.WrongArity()
	}
	if c.InTransaction() {
		return errInTransaction("RAFT.REMOVE")
	}
	if !n.IsLeader() {
		return n.notLeader()
	}
	var err error
	member := true
	c.WithoutTxLock(func() {
		// raft removes an unknown id as a no-op configuration entry and
		// reports success; a typo must get an ERR instead. prevIndex
		// makes the check and the removal one step: raft refuses the
		// removal if the configuration changed in between.
		f := n.raft.GetConfiguration()
		if err = f.Error(); err != nil {
			return
		}
		member = slices.ContainsFunc(f.Configuration().Servers, func(s raft.Server) bool { return s.ID == raft.ServerID(args[0]) })
		if member {
			err = n.raft.RemoveServer(raft.ServerID(args[0]), f.Index(), 10*time.Second).Error()
		}
	})
	if !member {
		return errNotMember
	}
	if err != nil {
		return server.NewError("RAFT.REMOVE: " + err.Error())
	}
	c.WriteOK()
	return nil
}

// RAFT.STATUS: node_id, role (leader, follower, candidate, shutdown),
// leader_id, applied_index, members (id=addr,...), then raft's own
// Stats, sorted by name.
func (n *Node) cmdStatus(c *server.Ctx, args [][]byte) error {
	if len(args) != 0 {
		return c.WrongArity()
	}
	leader, _ := n.Leader()
	var members string
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for i, s := range f.Configuration().Servers {
			if i > 0 {
				members += ","
			}
			members += string(s.ID) + "=" + string(s.Address)
		}
	}
	kv := [][2]string{
		{"node_id", n.cfg.ID},
		{"role", roleName(n.raft.State())},
		{"leader_id", leader},
		{"applied_index", strconv.FormatUint(n.AppliedIndex(), 10)},
		{"members", members},
	}
	stats := n.raft.Stats()
	keys := make([]string, 0, len(stats))
	for k := range stats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kv = append(kv, [2]string{"raft_" + k, stats[k]})
	}
	c.WriteArrayHeader(2 * len(kv))
	for _, p := range kv {
		c.WriteBulkString(p[0])
		c.WriteBulkString(p[1])
	}
	return nil
}

// errSnapshotArgs: RAFT.SNAPSHOT's only option is KEEP n.
var errSnapshotArgs = server.NewError("syntax error: RAFT.SNAPSHOT [KEEP n] (n the log entries kept behind the snapshot)")

// RAFT.SNAPSHOT [KEEP n]: replies the snapshot's last index.
func (n *Node) cmdSnapshot(c *server.Ctx, args [][]byte) error {
	if c.InTransaction() {
		return errInTransaction("RAFT.SNAPSHOT")
	}
	keep := int64(-1)
	switch len(args) {
	case 0:
	case 2:
		k, err := strconv.ParseInt(string(args[1]), 10, 64)
		if strings.ToUpper(string(args[0])) != "KEEP" || err != nil || k < 0 {
			return errSnapshotArgs
		}
		keep = k
	default:
		return errSnapshotArgs
	}
	var err error
	var index uint64
	// Snapshot runs on the FSM goroutine, after the entries before it,
	// an EXEC entry's among them.
	c.WithoutTxLock(func() {
		n.snapMu.Lock()
		defer n.snapMu.Unlock()
		if keep >= 0 {
			rc := n.raft.ReloadableConfig()
			old := rc
			rc.TrailingLogs = uint64(keep)
			if err = n.raft.ReloadConfig(rc); err != nil {
				return
			}
			defer n.raft.ReloadConfig(old)
		}
		f := n.raft.Snapshot()
		if err = f.Error(); err != nil {
			return
		}
		meta, rc, oerr := f.Open()
		if oerr != nil {
			err = oerr
			return
		}
		rc.Close()
		index = meta.Index
	})
	if err != nil {
		return server.NewError("RAFT.SNAPSHOT: " + err.Error())
	}
	c.WriteInt(int64(index))
	return nil
}

func roleName(s raft.RaftState) string {
	switch s {
	case raft.Leader:
		return "leader"
	case raft.Follower:
		return "follower"
	case raft.Candidate:
		return "candidate"
	}
	return "shutdown"
}

// RAFT.MAINTAIN: deletes the expired memories and runs the due prune
// policies, at the entry's time (every replica deletes the same ones);
// replies [expired, pruned].
func (n *Node) cmdMaintain(c *server.Ctx, args [][]byte) error {
	if len(args) != 0 {
		return c.WrongArity()
	}
	db := n.DB()
	expired, err := db.SweepExpired()
	if err != nil {
		return err
	}
	pruned, err := db.RunPrunePolicies()
	if err != nil {
		return err
	}
	c.WriteArrayHeader(2)
	c.WriteInt(int64(expired))
	c.WriteInt(int64(pruned))
	return nil
}
