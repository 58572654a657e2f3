package replica

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/server"
	"github.com/memrl/memrl/wal"
)

// stallingStable is a stable store whose next write of raft's current
// term, once armed, signals entered and waits for release before it
// writes (and closes wrote after): a heartbeat handler held inside raft.
type stallingStable struct {
	raft.StableStore
	armed            atomic.Bool
	entered, release chan struct{}
	wrote            chan struct{}

	mu   sync.Mutex // guards late
	late error      // the stalled write's error
}

func (s *stallingStable) SetUint64(key []byte, v uint64) error {
	if string(key) != "CurrentTerm" || !s.armed.CompareAndSwap(true, false) {
		return s.StableStore.SetUint64(key, v)
	}
	close(s.entered)
	<-s.release
	defer close(s.wrote)
	if err := s.StableStore.SetUint64(key, v); err != nil {
		// raft panics on this error ("failed to save current term:
		// database not open", the crash this test reproduces), which
		// would end the whole test binary: record it instead.
		s.mu.Lock()
		s.late = err
		s.mu.Unlock()
	}
	return nil
}

func (s *stallingStable) lateErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.late
}

// TestCloseWaitsForHeartbeat: a heartbeat of a later term that raft took
// on the transport's goroutine before Close began is still writing the
// term when raft's Shutdown returns. Close must wait for it before it
// closes the stores (raft panicked writing the term to a closed store),
// and the heartbeat completes.
func TestCloseWaitsForHeartbeat(t *testing.T) {
	trans, err := ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer trans.Close()
	srv, err := server.New(server.Config{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	st := &stallingStable{entered: make(chan struct{}), release: make(chan struct{}), wrote: make(chan struct{})}
	// No Peers: a follower with no configuration, whose only writer of
	// the term is the heartbeat below.
	node, err := Open(Config{ID: "n1", Dir: t.TempDir(), Transport: trans, Raft: testRaftConfig(),
		Engine:           engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: func(string, ...any) {}},
		MaintainInterval: -1, Logger: testLogger(t),
		wrapStable: func(s raft.StableStore) raft.StableStore { st.StableStore = s; return st }}, srv)
	if err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			close(st.release)
		}
	}
	defer release()

	ghost, err := ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ghost.Close()
	st.armed.Store(true)
	sent := make(chan error, 1)
	go func() {
		var resp raft.AppendEntriesResponse
		// A heartbeat: a term and a leader, nothing else.
		sent <- ghost.AppendEntries("n1", trans.LocalAddr(), &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("ghost"), Addr: []byte(ghost.LocalAddr())},
			Term:      1000}, &resp)
	}()
	select {
	case <-st.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the heartbeat never reached raft's term write")
	}

	closed := make(chan error, 1)
	go func() { closed <- node.Close() }()
	var closeErr error
	done := false
	select {
	case closeErr = <-closed:
		done = true
		t.Errorf("Close returned (err %v) while a heartbeat was still inside raft", closeErr)
	case <-node.heartbeats.closing:
		// Close waits for the heartbeat: let it finish.
	case <-time.After(20 * time.Second):
		t.Fatal("Close neither returned nor waited for the heartbeat")
	}
	release()
	if !done {
		select {
		case closeErr = <-closed:
		case <-time.After(20 * time.Second):
			t.Fatal("Close did not return after the heartbeat finished")
		}
	}
	if closeErr != nil {
		t.Errorf("Close: %v", closeErr)
	}
	select {
	case <-st.wrote:
	case <-time.After(20 * time.Second):
		t.Fatal("the heartbeat's term write never finished")
	}
	if err := st.lateErr(); err != nil {
		t.Errorf("the heartbeat wrote raft's term after Close closed the store: %v", err)
	}
	select {
	case <-sent: // answered, or the connection closed: either is fine
	case <-time.After(20 * time.Second):
		t.Fatal("the heartbeat's sender never returned")
	}
}

// TestHeartbeatGuardClosed: after close, a heartbeat gets an error at
// once and never reaches raft's handler; before, it does.
func TestHeartbeatGuardClosed(t *testing.T) {
	g := newHeartbeatGuard()
	var calls atomic.Int32
	h := g.wrap(func(rpc raft.RPC) { calls.Add(1); rpc.Respond(nil, nil) })
	beat := func() error {
		ch := make(chan raft.RPCResponse, 1)
		h(raft.RPC{Command: &raft.AppendEntriesRequest{Term: 1}, RespChan: ch})
		select {
		case r := <-ch:
			return r.Error
		default:
			t.Fatal("no response")
			return nil
		}
	}
	if err := beat(); err != nil || calls.Load() != 1 {
		t.Fatalf("open guard: err %v, calls %d", err, calls.Load())
	}
	g.close()
	g.close() // idempotent
	if err := beat(); err != errHeartbeatClosed || calls.Load() != 1 {
		t.Fatalf("closed guard: err %v, calls %d; want %v, 1", err, calls.Load(), errHeartbeatClosed)
	}
	if g.wrap(nil) != nil {
		t.Fatal("wrap(nil) must stay nil: the transport then queues heartbeats to raft's loop")
	}
}

// TestGuardedTransportInterfaces: raft sees the same optional interfaces
// on the guarded transport as on the one it wraps (pre-vote, close).
func TestGuardedTransportInterfaces(t *testing.T) {
	trans, err := ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer trans.Close()
	gt := guardTransport(trans, newHeartbeatGuard(), newPipelineSet())
	if _, ok := gt.(raft.WithPreVote); !ok {
		t.Error("guarded NetworkTransport lost WithPreVote")
	}
	if _, ok := gt.(raft.WithClose); !ok {
		t.Error("guarded NetworkTransport lost WithClose")
	}
	noPV := guardTransport(struct{ raft.Transport }{trans}, newHeartbeatGuard(), newPipelineSet())
	if _, ok := noPV.(raft.WithPreVote); ok {
		t.Error("a transport without pre-vote must not look as if it had it")
	}
	if err := gt.(raft.WithClose).Close(); err != nil {
		t.Fatal(err)
	}
	if !trans.IsShutdown() {
		t.Error("Close did not close the wrapped transport")
	}
}
