package replica

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/cluster"
	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/server"
	"github.com/memrl/memrl/wal"
)

// testNode is one replica of an in-process group: a node, its server on a
// loopback port, and its raft transport.
type testNode struct {
	id, dir, raftAddr string
	node              *Node
	srv               *server.Server
	addr              string // client address
	trans             *raft.NetworkTransport
	// stream, if set instead of trans, is the stream layer the node
	// builds its own transport on (Config.Stream; used once); sec is
	// what relisten makes the next one with.
	stream   raft.StreamLayer
	sec      Security
	serveErr chan error
	// tweak, if set, adjusts the node's Config before Open.
	tweak func(*Config)

	// clustered, if set, makes start register slot states before the
	// node opens and call it after, to set a cluster router
	// (setslot_test.go); slots is the table of the running node.
	clustered func(tn *testNode)
	slots     *cluster.SlotStates
}

// testRaftConfig has timeouts that tolerate a loaded 2-core machine
// under -race, and snapshots only when asked.
func testRaftConfig() *raft.Config {
	c := DefaultRaftConfig()
	c.SnapshotInterval = time.Hour
	c.SnapshotThreshold = 1 << 40
	c.TrailingLogs = 16
	return c
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("REPLICA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startGroup starts n nodes bootstrapped as one group, on TCP.
func startGroup(t testing.TB, n int) []*testNode {
	t.Helper()
	return startGroupOpts(t, n, groupOpts{})
}

// tcpStream is a loopback TCP stream layer for a node to build its raft
// transport on (Config.Stream), as memrl serve's nodes do: the node's
// Close then closes its raft connections, so no raft goroutine waits out
// a 10 s RPC deadline on a peer that does not answer
// (transport_closing.go). A transport made beforehand (Config.Transport,
// ListenTCP) gets no such bound: on one, a raft RPC to a silent peer
// address held Close past its timeout (TestCloseWithSilentPeerAddresses).
func tcpStream(sec Security) (raft.StreamLayer, error) {
	return newSecureStream("127.0.0.1:0", sec, nil)
}

// groupSecurity is a group's own cluster secret. Without one, a node of
// another group (another test process: go test runs packages side by
// side) whose stopped peer's port a node of this group was given could
// reach it and replicate its log into it: seen once in 300 runs of
// TestTransferLeadership beside a process running replica's fault tests
// ("n2's state differs from leader n3's", a memory of the other test).
func groupSecurity(t testing.TB) Security {
	secret := make([]byte, MinSecretLen)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	return Security{Secret: secret}
}

// startGroupWith starts n nodes bootstrapped as one group, on transports
// made by mk.
func startGroupWith(t testing.TB, n int, mk func() (*raft.NetworkTransport, error)) []*testNode {
	t.Helper()
	return startGroupOpts(t, n, groupOpts{trans: mk})
}

// groupOpts say how startGroupOpts makes each node: on a transport made by
// trans, or else a transport the node builds on a stream layer made by
// stream (Config.Stream; tcpStream if neither is set); tweak, if set,
// adjusts each node's Config.
type groupOpts struct {
	trans  func() (*raft.NetworkTransport, error)
	stream func() (raft.StreamLayer, error)
	tweak  func(*Config)
}

// startGroupOpts starts n nodes bootstrapped as one group.
func startGroupOpts(t testing.TB, n int, o groupOpts) []*testNode {
	t.Helper()
	base := t.TempDir()
	nodes := make([]*testNode, n)
	var peers []Peer
	var sec Security
	if o.trans == nil && o.stream == nil {
		sec = groupSecurity(t)
		o.stream = func() (raft.StreamLayer, error) { return tcpStream(sec) }
	}
	for i := range nodes {
		tn := &testNode{id: fmt.Sprintf("n%d", i+1), dir: filepath.Join(base, fmt.Sprintf("n%d", i+1)), tweak: o.tweak, sec: sec}
		if o.trans != nil {
			tr, err := o.trans()
			if err != nil {
				t.Fatal(err)
			}
			tn.trans, tn.raftAddr = tr, string(tr.LocalAddr())
		} else {
			s, err := o.stream()
			if err != nil {
				t.Fatal(err)
			}
			tn.stream, tn.raftAddr = s, s.Addr().String()
		}
		nodes[i] = tn
		peers = append(peers, Peer{ID: tn.id, RaftAddr: tn.raftAddr})
	}
	for _, tn := range nodes {
		tn.start(t, peers)
	}
	t.Cleanup(func() {
		for _, tn := range nodes {
			tn.stop(t)
		}
	})
	return nodes
}

// start opens tn's node and serves its server (its transport must be
// listening).
func (tn *testNode) start(t testing.TB, peers []Peer) {
	t.Helper()
	srv, err := server.New(server.Config{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	var opened func(*engine.DB) error
	if tn.clustered != nil {
		var cur atomic.Pointer[engine.DB]
		tn.slots = cluster.NewSlotStates()
		srv.SetSlotStates(tn.slots, 0, func(name string) bool {
			_, err := cur.Load().Collection(name)
			return err == nil
		})
		opened = func(db *engine.DB) error {
			if err := tn.slots.Load(db.Dir()); err != nil {
				return err
			}
			cur.Store(db)
			return nil
		}
	}
	cfg := Config{ID: tn.id, Dir: tn.dir, Peers: peers, Raft: testRaftConfig(),
		Engine:           engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: func(string, ...any) {}},
		MaintainInterval: 100 * time.Millisecond, Logger: testLogger(t), EngineOpened: opened}
	if tn.trans != nil {
		cfg.Transport = tn.trans
	} else {
		cfg.Stream = tn.stream
	}
	if tn.tweak != nil {
		tn.tweak(&cfg)
	}
	node, err := Open(cfg, srv)
	if err != nil {
		t.Fatal(err)
	}
	tn.node, tn.srv = node, srv
	if tn.clustered != nil {
		tn.clustered(tn)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tn.node, tn.srv, tn.addr, tn.serveErr = node, srv, ln.Addr().String(), make(chan error, 1)
	go func() { tn.serveErr <- srv.Serve(ln) }()
}

// stop shuts tn down (once).
func (tn *testNode) stop(t testing.TB) {
	if tn.node == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tn.srv.Shutdown(ctx)
	<-tn.serveErr
	if err := tn.node.Close(); err != nil && err != raft.ErrRaftShutdown {
		t.Errorf("%s: Close: %v", tn.id, err)
		if errors.Is(err, ErrShutdownTimeout) {
			// Which raft goroutine did not stop: TestTransferLeadership
			// failed so once under load (1 of 3 runs of the package,
			// 0 of 360 runs alone), with no trace of the cause.
			var stacks strings.Builder
			pprof.Lookup("goroutine").WriteTo(&stacks, 1)
			t.Logf("goroutines when Close gave up:\n%s", stacks.String())
		}
	}
	if tn.trans != nil {
		tn.trans.Close()
	}
	tn.node = nil
}

// relisten makes a new transport, or stream layer, on tn's raft address
// (after stop), of the kind tn had.
func (tn *testNode) relisten(t *testing.T) {
	t.Helper()
	var err error
	for i := 0; i < 50; i++ {
		if tn.trans != nil {
			tn.trans, err = ListenTCP(tn.raftAddr, nil)
		} else {
			tn.stream, err = newSecureStream(tn.raftAddr, tn.sec, nil)
		}
		if err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal(err)
}

// client returns a go-redis client of tn, closed when the test ends.
// Its read timeout is 30 s, not go-redis's 3 s: a pipeline of a few hundred
// replicated writes waits for a quorum's fsyncs on each, which took longer
// than 3 s on a loaded 2-core machine (TestSnapshotShipsIndex failed so).
// No test here relies on a read timing out.
func (tn *testNode) client(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: tn.addr, MaxRetries: -1, PoolSize: 16, ReadTimeout: 30 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// waitLeader waits for one live node to lead and returns it.
func waitLeader(t testing.TB, nodes []*testNode) *testNode {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, tn := range nodes {
			if tn.node != nil && tn.node.IsLeader() {
				return tn
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no leader elected")
	return nil
}

// waitCaughtUp waits until every live node's state machine has applied
// what the leader's has (after a barrier, everything committed). If
// leader no longer leads (on a loaded machine a leader that misses its
// lease steps down, and a restarted node can start an election), the
// barrier goes to whichever node of nodes leads now: it has everything
// committed, so the wait means the same.
func waitCaughtUp(t *testing.T, leader *testNode, nodes []*testNode) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := leader.node.Raft().Barrier(10 * time.Second).Error()
		if err == nil {
			break
		}
		if (err != raft.ErrNotLeader && err != raft.ErrLeadershipLost) || time.Now().After(deadline) {
			t.Fatalf("barrier on %s: %v", leader.id, err)
		}
		t.Logf("barrier on %s: %v; asking the current leader", leader.id, err)
		leader = waitLeader(t, nodes)
	}
	want := leader.node.AppliedIndex()
	deadline = time.Now().Add(20 * time.Second)
	for _, tn := range nodes {
		for tn.node != nil && tn.node.AppliedIndex() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%s applied %d, leader %d", tn.id, tn.node.AppliedIndex(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// digest describes a database's whole logical state: every collection
// and every memory's id, Q, visits, rewards, times, payload, vector,
// attributes, key and expiry.
func digest(t *testing.T, db *engine.DB) string {
	t.Helper()
	var b strings.Builder
	names := db.List()
	sort.Strings(names)
	for _, name := range names {
		c, err := db.Collection(name)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "collection %s %+v\n", name, c.Config())
		var cursor uint64
		for {
			page, next, err := c.Scan(cursor, engine.ScanOptions{Count: 1000, WithPayload: true, WithVector: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range page {
				fmt.Fprintf(&b, "%d q=%v v=%d lr=%v mr=%v c=%d u=%d p=%q vec=%v a=%s k=%q x=%d\n", m.ID, m.Q, m.Visits,
					m.LastReward, m.MeanReward, m.Created.UnixNano(), m.Updated.UnixNano(), m.Payload, m.Vector, m.Attrs, m.Key, m.Expires.UnixNano())
			}
			if next == 0 {
				break
			}
			cursor = next
		}
	}
	return b.String()
}

// sameState fails unless every live node's state is the leader's.
func sameState(t *testing.T, leader *testNode, nodes []*testNode) string {
	t.Helper()
	waitCaughtUp(t, leader, nodes)
	want := digest(t, leader.node.DB())
	for _, tn := range nodes {
		if tn.node == nil || tn == leader {
			continue
		}
		if got := digest(t, tn.node.DB()); got != want {
			t.Fatalf("%s's state differs from leader %s's: %s", tn.id, leader.id, firstDiff(got, want))
		}
	}
	return want
}

// firstDiff describes where two digests first differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d of %d/%d:\n got  %s\n want %s", i+1, len(g), len(w), a, b)
		}
	}
	return "no difference"
}

func clip(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}

// quietRedis drops go-redis's own log lines (dial failures while a node
// is down are expected here).
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quietRedis{}) }
