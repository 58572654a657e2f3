package replica

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/memrl/memrl/cluster"
	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/server"
)

// Peer is a voter of a shard's raft group: its node id and raft address.
type Peer struct {
	ID       string
	RaftAddr string
}

// Config configures a Node.
type Config struct {
	// ID is this node's id (its line of nodes.tsv); it must be among
	// Peers when the group is bootstrapped.
	ID string
	// Dir is the node's folder: DIR/raft holds the raft log and stable
	// store (raft.db) and the snapshots; DIR/fsm the engine, wiped at
	// every Open (the engine's state is rebuilt from the latest snapshot
	// and the raft log after it).
	Dir string
	// RaftAddr is the TCP address the raft transport listens on and
	// advertises, unless Transport is set.
	RaftAddr string
	// Transport, if set, is used instead of a TCP transport on RaftAddr
	// (tests: a transport already listening, or one that injects
	// faults). A given transport is the caller's to close; Close cannot
	// end its blocked connections (prefer Stream).
	Transport raft.Transport
	// Security authenticates the TCP transport's peers (transport.go):
	// the cluster secret, mutual TLS, protected mode. Unused with
	// Transport.
	Security Security
	// ClientAuth is what this node sends to other nodes' client ports
	// (RAFT.ADD's probe of the joining node); zero sends no AUTH.
	ClientAuth cluster.Auth
	// Stream, if set (and Transport is not), is the stream layer the
	// node's raft transport runs over instead of TCP on RaftAddr (tests:
	// one that injects faults). The node closes it.
	Stream raft.StreamLayer
	// Peers are the voters the group is bootstrapped with when this node
	// has no raft state yet: every node of a shard must be given the same
	// list. Empty means do not bootstrap (a node added later with
	// RAFT.ADD).
	Peers []Peer
	// Engine are the engine's options. Now, SweepInterval and
	// PruneInterval are overridden (fsm.go); Sync may be wal.SyncNone:
	// durability comes from the raft log.
	Engine engine.Options
	// Raft tunes hashicorp/raft; nil means DefaultRaftConfig. LocalID
	// and Logger are set by Open.
	Raft *raft.Config
	// ApplyTimeout bounds how long a write waits to be enqueued by raft
	// (raft.Apply's timeout); 0 means 5 seconds.
	ApplyTimeout time.Duration
	// MaintainInterval is how often the leader looks for expired
	// memories and due prune policies and proposes their deletes
	// (maintain.go); 0 means engine.DefaultSweepInterval, < 0 never.
	MaintainInterval time.Duration
	// Logger receives the node's and raft's messages; nil means
	// slog.Default().
	Logger *slog.Logger
	// StaleReadBound: a follower serves reads only while it has heard
	// from its shard's leader within this bound (readgate.go); 0 means
	// twice Raft.HeartbeatTimeout (2 s by default).
	StaleReadBound time.Duration
	// ShutdownTimeout bounds Close's wait for raft to stop (transport_closing.go);
	// 0 means 10 seconds.
	ShutdownTimeout time.Duration
	// Fatal is called when a write of the raft log fails (logstore.go);
	// nil means log the error and exit the process with status 70: a
	// failed fsync is never retried.
	Fatal func(error)
	// EngineOpened, if set, is called each time the node opens an
	// engine: the fresh one at Open, and a raft snapshot's once read and
	// opened, before it replaces the old engine, on the FSM's goroutine
	// (no entry applies meanwhile), so that db is the engine entries
	// apply to from then on. State kept beside the engine's files in
	// db.Dir(), such as the cluster's slot states
	// (cluster.SlotStates.Load), is read back from it. An error fails
	// Open, or refuses the snapshot (nothing changes).
	EngineOpened func(db *engine.DB) error

	// wrapStable, if set, wraps the stable store raft is given (tests).
	wrapStable func(raft.StableStore) raft.StableStore
}

// DefaultRaftConfig is hashicorp/raft's default configuration (heartbeat
// and election timeouts of 1 s, a leader lease of 500 ms: a follower's
// fsync of a large batch on a busy disk must not depose a leader) with a
// shorter commit timeout and memrl's snapshot policy.
func DefaultRaftConfig() *raft.Config {
	c := raft.DefaultConfig()
	c.CommitTimeout = 5 * time.Millisecond
	// raft.Apply does not wait for the leader's loop, busy with the
	// fsync of the entries before: the batcher (batch.go) proposes the
	// next entry at once, and raft appends every entry queued meanwhile
	// with one fsync.
	c.BatchApplyCh = true
	c.SnapshotInterval = 30 * time.Second
	c.SnapshotThreshold = 8192
	c.TrailingLogs = 10240
	return c
}

// Node is one replica of a shard: a hashicorp/raft member whose state
// machine is an engine driven through a server's command handlers. Open
// it, serve the server, Close it after the server has shut down.
type Node struct {
	cfg Config
	log *slog.Logger
	// fatal stops the process (Config.Fatal); set before raft starts.
	fatal func(error)
	srv   *server.Server
	raft  *raft.Raft

	store     *raftboltdb.BoltStore
	transport raft.Transport
	ownTrans  bool // the node made transport and closes it
	// streams is the stream layer under transport when the node made
	// it; Close ends its connections (transport_closing.go).
	streams *closingStream
	// heartbeats guards raft's heartbeat handler, which runs on the
	// transport's goroutines, against the stores closing
	// (transport_guard.go).
	heartbeats *heartbeatGuard
	// pipes are the replication pipelines raft was given, closed when
	// this node stops leading and when it closes (transport_pipeline.go).
	pipes *pipelineSet

	// floor is the applied index the engine must reach again before
	// this node serves follower reads; floorReached is set once it has
	// (readgate.go).
	floor            atomic.Uint64
	floorReached     atomic.Bool
	heartbeatTimeout time.Duration // raft's
	electionTimeout  time.Duration // raft's

	// db is the engine; replaced whole by fsm.Restore.
	db atomic.Pointer[engine.DB]
	// gen numbers the engine folders under DIR/fsm.
	gen atomic.Int64
	// clock is the unix nanoseconds of the entry being applied, 0
	// between entries (fsm.go).
	clock atomic.Int64
	// applied is the index of the last entry the state machine applied.
	applied atomic.Uint64
	// applyIndex is the index of the entry being applied (move_*.go).
	applyIndex atomic.Uint64
	// moves is the replicated state of collection moves; exports the
	// images this node wrote as a move's source (move_*.go).
	moves   moveState
	preps   prepJobs // imports prepared off the apply goroutine (move_prepare.go)
	exports exportSet

	// readyTerm is the raft term in which this node, as leader, has
	// applied every entry of earlier terms (a Barrier): linearizable
	// reads in any other term run a Barrier first (BeforeRead).
	readyTerm atomic.Uint64

	// batch turns proposed commands into raft entries (batch.go).
	batch batcher

	// snapMu serialises RAFT.SNAPSHOT, which changes TrailingLogs for
	// the length of its snapshot.
	snapMu sync.Mutex

	stop chan struct{}  // closed by Close
	wg   sync.WaitGroup // background goroutines (leadership watch, maintenance)
}

// Open starts a node: it opens a fresh engine under DIR/fsm, registers
// the memory commands (through the node, so that a restored snapshot can
// replace the engine), RAFT.* and the replicator on srv, opens the raft
// stores, bootstraps the group if this node has no raft state and Peers
// is set, and starts raft, which restores the latest snapshot and applies
// the committed log after it. srv must not be serving yet and must not
// have RegisterMem called.
func Open(cfg Config, srv *server.Server) (*Node, error) {
	if cfg.ID == "" || cfg.Dir == "" {
		return nil, errors.New("replica: Config.ID and Config.Dir are required")
	}
	if cfg.ApplyTimeout <= 0 {
		cfg.ApplyTimeout = 5 * time.Second
	}
	if cfg.MaintainInterval == 0 {
		cfg.MaintainInterval = engine.DefaultSweepInterval
	}
	n := &Node{cfg: cfg, log: cfg.Logger, srv: srv, stop: make(chan struct{})}
	if n.log == nil {
		n.log = slog.Default()
	}
	n.log = n.log.With("node", cfg.ID)
	// The engine is rebuilt from raft at every start.
	if err := os.RemoveAll(filepath.Join(cfg.Dir, "fsm")); err != nil {
		return nil, err
	}
	raftDir := filepath.Join(cfg.Dir, "raft")
	if err := os.MkdirAll(raftDir, 0o755); err != nil {
		return nil, err
	}
	db, err := engine.Open(n.nextEngineDir(), n.engineOptions())
	if err != nil {
		return nil, err
	}
	if h := cfg.EngineOpened; h != nil {
		if err := h(db); err != nil {
			db.Close()
			return nil, err
		}
	}
	n.db.Store(db)
	srv.RegisterMemFunc(n.DB)
	n.registerCommands(srv) // commands.go
	srv.SetReplicator(n)

	fail := func(err error) (*Node, error) {
		n.closeStores()
		return nil, err
	}
	// raft.db is flocked: a second process on the same folder fails
	// after a second instead of waiting forever. NoSync stays false:
	// every append is fsynced before raft counts it.
	n.store, err = raftboltdb.New(raftboltdb.Options{Path: filepath.Join(raftDir, "raft.db"),
		BoltOptions: &bbolt.Options{Timeout: time.Second}})
	if err != nil {
		return fail(fmt.Errorf("replica: raft store: %w", err))
	}
	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: slogWriter{n.log}})
	snaps, err := raft.NewFileSnapshotStoreWithLogger(raftDir, 2, hlog)
	if err != nil {
		return fail(fmt.Errorf("replica: snapshot store: %w", err))
	}
	n.transport = cfg.Transport
	if n.transport == nil {
		stream := cfg.Stream
		if stream == nil {
			if stream, err = newSecureStream(cfg.RaftAddr, cfg.Security, hlog); err != nil {
				return fail(fmt.Errorf("replica: raft transport on %s: %w", cfg.RaftAddr, err))
			}
		}
		n.streams = newClosingStream(stream) // transport_closing.go
		n.transport = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream: n.streams, MaxPool: 3, Timeout: 10 * time.Second, Logger: hlog})
		n.ownTrans = true
	}
	rc := DefaultRaftConfig()
	if cfg.Raft != nil {
		c := *cfg.Raft
		rc = &c
	}
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.Logger = hlog
	n.heartbeatTimeout, n.electionTimeout = rc.HeartbeatTimeout, rc.ElectionTimeout
	floor, err := readFloor(n.store, n.store, snaps) // readgate.go
	if err != nil {
		return fail(fmt.Errorf("replica: read floor: %w", err))
	}
	n.floor.Store(floor)
	has, err := raft.HasExistingState(n.store, n.store, snaps)
	if err != nil {
		return fail(err)
	}
	if !has && len(cfg.Peers) > 0 {
		var conf raft.Configuration
		for _, p := range cfg.Peers {
			conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
		}
		if err := raft.BootstrapCluster(rc, n.store, n.store, snaps, n.transport, conf); err != nil {
			return fail(fmt.Errorf("replica: bootstrap: %w", err))
		}
	}
	fatal := cfg.Fatal
	if fatal == nil {
		fatal = func(err error) {
			n.log.Error("replica: stopping the process (a failed write is never retried); restart recovers from the raft snapshot and log on disk", "err", err)
			os.Exit(70)
		}
	}
	n.fatal = fatal
	var stable raft.StableStore = n.store
	if cfg.wrapStable != nil {
		stable = cfg.wrapStable(stable)
	}
	n.heartbeats = newHeartbeatGuard()
	n.pipes = newPipelineSet()
	n.raft, err = raft.NewRaft(rc, fsm{n}, readGateLogStore{fatalLogStore{n.store, fatal}, n}, stable, snaps,
		guardTransport(n.transport, n.heartbeats, n.pipes)) // transport_guard.go
	if err != nil {
		return fail(fmt.Errorf("replica: start raft: %w", err))
	}
	n.wg.Add(2)
	go n.watchLeadership()
	go n.maintain() // maintain.go
	return n, nil
}

// closeStores closes what Open opened before raft started.
func (n *Node) closeStores() {
	if n.ownTrans {
		if c, ok := n.transport.(io.Closer); ok {
			c.Close()
		}
	}
	if n.store != nil {
		n.store.Close()
	}
	n.preps.stopAll() // before the engine they prepare into closes
	if db := n.db.Load(); db != nil {
		db.Close()
	}
}

// ErrShutdownTimeout is Close's error when raft did not stop within
// Config.ShutdownTimeout. The stores are then left open (raft's goroutines
// may still use them); the caller should exit the process, which loses
// nothing: every acknowledged entry is already fsynced in the raft log,
// and the engine is rebuilt from the raft snapshot and log at every start.
var ErrShutdownTimeout = errors.New("replica: raft did not stop within the shutdown timeout")

// Close stops raft and closes the stores and the engine, within
// Config.ShutdownTimeout: it closes every raft connection the node's own
// transport holds, so that no goroutine stays blocked on a peer that
// stopped reading (transport_closing.go), and gives up with ErrShutdownTimeout
// if raft still has not stopped. After a clean stop it records the
// applied index for the next Open (readgate.go). Shut the server down
// first: commands running meanwhile fail. A leader should hand its
// leadership over first (TransferLeadership).
func (n *Node) Close() error {
	close(n.stop)
	f := n.raft.Shutdown()
	if n.streams != nil {
		n.streams.shutConns()
	}
	// A replication goroutine blocked on a pipeline raft abandoned
	// would hold raft's Shutdown for ever (transport_pipeline.go).
	n.pipes.shutAll()
	timeout := n.cfg.ShutdownTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	var err error
	select {
	case err = <-done:
	case <-t.C:
		n.log.Error("replica: raft did not stop in time; leaving its stores open", "timeout", timeout)
		return ErrShutdownTimeout
	}
	// Raft has stopped, but a heartbeat it took on the transport's
	// goroutine may still be running: wait for it before the stores
	// close (transport_guard.go).
	n.heartbeats.close()
	n.wg.Wait()
	rerr := n.recordApplied() // readgate.go
	n.closeStores()
	return errors.Join(err, rerr)
}

// TransferLeadership hands this node's leadership of its shard to another
// voter and waits, at most timeout, until this node knows a leader that
// is not itself. hashicorp/raft's LeadershipTransfer brings the most
// up-to-date follower up to date and has it start an election at once
// (TimeoutNow), so the shard has a new leader without waiting an election
// timeout; meanwhile this node refuses writes with TRYAGAIN, and once it
// follows, its router answers MOVED to the new leader. A node that does
// not lead returns nil at once.
func (n *Node) TransferLeadership(timeout time.Duration) error {
	if !n.IsLeader() {
		return nil
	}
	deadline := time.Now().Add(timeout)
	// raft abandons a transfer after its election timeout (a target slow
	// to catch up on a loaded machine) or at once (the target's RPC
	// failed): try up to three times while time remains and this node
	// still leads. Not more: when every peer is stopping too (memrl
	// cluster stop), trying on only delays the shutdown.
	for attempt := 1; ; attempt++ {
		err := n.raft.LeadershipTransfer().Error()
		if err == nil || !n.IsLeader() {
			break
		}
		if attempt == 3 || time.Now().Add(n.electionTimeout).After(deadline) {
			return fmt.Errorf("replica: leadership transfer: %w", err)
		}
		n.log.Warn("replica: leadership transfer failed; trying again", "err", err)
		time.Sleep(10 * time.Millisecond)
	}
	for time.Now().Before(deadline) {
		if id, ok := n.Leader(); ok && id != n.cfg.ID {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return errors.New("replica: leadership transfer: no new leader known in time")
}

// DB returns the engine the node applies to (replaced when a snapshot is
// installed).
func (n *Node) DB() *engine.DB { return n.db.Load() }

// Raft returns the node's raft instance (tests, RAFT.STATUS).
func (n *Node) Raft() *raft.Raft { return n.raft }

// ID returns the node's id.
func (n *Node) ID() string { return n.cfg.ID }

// IsLeader reports whether this node is its shard's leader.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Leader returns the node id of the shard's leader as this node knows it;
// ok is false when it knows none (an election is under way).
func (n *Node) Leader() (nodeID string, ok bool) {
	_, id := n.raft.LeaderWithID()
	return string(id), id != ""
}

// AppliedIndex returns the raft index of the last entry this node's state
// machine has applied (a command or a configuration entry), or of the
// snapshot it installed last if that is later. (raft's own AppliedIndex
// counts entries handed to the state machine, not yet applied.)
func (n *Node) AppliedIndex() uint64 {
	a := n.applied.Load()
	if s, err := strconv.ParseUint(n.raft.Stats()["last_snapshot_index"], 10, 64); err == nil {
		a = max(a, s)
	}
	return a
}

// Errors of Replicate and BeforeRead, as the client reads them.
var (
	// errNotLeader: the write was not proposed; a client may retry it on
	// the leader (TRYAGAIN, which cluster clients retry).
	errNotLeader = &server.ReplyError{Code: "TRYAGAIN", Msg: "this node is not its shard's leader; the command was not applied"}
	// errShutdown: the node is stopping; the command was not applied.
	errShutdown = &server.ReplyError{Code: "TRYAGAIN", Msg: "this node is shutting down; the command was not applied"}
	// errTransferring: the leader is handing its leadership over
	// (TransferLeadership); the command was not applied.
	errTransferring = &server.ReplyError{Code: "TRYAGAIN", Msg: "this node is handing its shard's leadership to another node; the command was not applied"}
)

// Replicate proposes cmd with this node's clock and returns the reply of
// its application (server.Replicator). It fails at once on a follower. A
// reply means the entry was committed by a majority (each of which
// fsynced it to raft-boltdb) and applied here.
func (n *Node) Replicate(c *server.Ctx, cmd [][]byte) ([]byte, error) {
	return n.Propose(c, cmd)() // batch.go
}

// awaitTransfer waits, at most raft's election timeout (after which raft
// abandons a transfer), until this node follows a known new leader, and
// returns the error for a write refused during the transfer. The client's
// retry is then redirected (MOVED) by the router at once, where without
// the wait it would be refused again and again, or get CLUSTERDOWN in the
// moment between this node's step-down and the new leader's first
// heartbeat (which makes redis-py rediscover the cluster and sleep).
func (n *Node) awaitTransfer() error {
	for deadline := time.Now().Add(n.electionTimeout); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if n.raft.State() == raft.Shutdown {
			return errShutdown
		}
		if id, ok := n.Leader(); ok && id != n.cfg.ID && n.raft.State() != raft.Leader {
			return n.notLeader()
		}
	}
	if n.raft.State() != raft.Leader {
		return n.notLeader()
	}
	return errTransferring
}

// notLeader is the error for a command sent to a follower.
func (n *Node) notLeader() error {
	if id, ok := n.Leader(); ok {
		return &server.ReplyError{Code: "TRYAGAIN", Msg: "this node is not its shard's leader (" + id + " is); the command was not applied"}
	}
	return errNotLeader
}

// BeforeRead makes a leader's reads linearizable (server.ReadGate): the
// leader has applied every entry committed before it took over (a
// Barrier, once per term) and still leads (VerifyLeader, a round of
// heartbeats). On a follower the read may be stale (a router sends reads
// here only for a READONLY connection), but never older than what the node
// had applied before it started, and not while the node is cut off from
// its leader (followerRead, readgate.go).
func (n *Node) BeforeRead(c *server.Ctx) error {
	if n.raft.State() != raft.Leader {
		return n.followerRead()
	}
	// The term, not a flag: raft's leadership channel keeps only the
	// latest value, so a loss and a regain can arrive as one "true".
	if term := n.term(); n.readyTerm.Load() != term {
		if err := n.raft.Barrier(n.cfg.ApplyTimeout).Error(); err != nil {
			return n.notLeaderErr(err)
		}
		n.readyTerm.Store(term)
	}
	if err := n.raft.VerifyLeader().Error(); err != nil {
		return n.notLeaderErr(err)
	}
	return nil
}

// term returns raft's current term.
func (n *Node) term() uint64 {
	t, _ := strconv.ParseUint(n.raft.Stats()["term"], 10, 64)
	return t
}

func (n *Node) notLeaderErr(err error) error {
	if errors.Is(err, raft.ErrRaftShutdown) {
		return errShutdown
	}
	return n.notLeader()
}

// watchLeadership runs a Barrier each time this node becomes leader, so
// that its first reads need not wait for one (BeforeRead checks the term
// whatever this goroutine saw).
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	ch := n.raft.LeaderCh()
	for {
		select {
		case <-n.stop:
			return
		case leader := <-ch:
			if !leader {
				// raft stopped replicating: end the sends it left
				// blocked on pipelines (transport_pipeline.go).
				n.pipes.closeAll()
				continue
			}
			term := n.term()
			// Not Barrier(0).Error(): a barrier still in raft's buffered
			// apply queue when raft shuts down is never answered, and
			// Close, waiting for this goroutine, hung for good (seen in
			// the flake hunt: TestRaftAddRefusesBadNodeID's cleanup, 22
			// minutes). futureErr also ends once raft has shut down.
			if err := n.futureErr(n.raft.Barrier(0)); err == nil && n.raft.State() == raft.Leader {
				n.readyTerm.Store(term)
			}
		}
	}
}

// slogWriter turns raft's hclog lines into slog records.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Warn(string(trimNL(p)))
	return len(p), nil
}

func trimNL(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}

// ListenTCP returns a raft TCP transport listening on addr ("host:0"
// picks a port), for callers (tests) that need its address before Open.
func ListenTCP(addr string, out io.Writer) (*raft.NetworkTransport, error) {
	if out == nil {
		out = io.Discard
	}
	return raft.NewTCPTransport(addr, nil, 3, 10*time.Second, out)
}
