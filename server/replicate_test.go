package server

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// testReplicator, when set, makes startServer give every test server a
// Replicator (TestReplicatedBehaviourUnchanged). Tests of this package do
// not run in parallel, so a package variable is safe.
var testReplicator func(*Server) Replicator

// localReplicator "replicates" by applying at once through Apply, as a
// one-node group would: every client must see exactly what it sees
// without replication.
type localReplicator struct {
	s        *Server
	mu       sync.Mutex // serialises Apply, as a raft FSM does
	proposed *atomic.Int64
	last     [][]byte // the last command proposed; guarded by mu
}

func (r *localReplicator) Replicate(c *Ctx, cmd [][]byte) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.proposed.Add(1)
	r.last = cmd
	return r.s.Apply(cmd), nil
}

// TestReplicatedBehaviourUnchanged runs existing server tests with a
// Replicator that applies locally: the replies and the data must be the
// same as without one, and the writes must have gone through it.
func TestReplicatedBehaviourUnchanged(t *testing.T) {
	var proposed atomic.Int64
	runWithReplicator(t, &proposed, func(s *Server) Replicator { return &localReplicator{s: s, proposed: &proposed} })
}

// runWithReplicator runs existing server tests with every test server
// given the Replicator mk makes, which counts what it is proposed in
// proposed.
func runWithReplicator(t *testing.T, proposed *atomic.Int64, mk func(*Server) Replicator) {
	testReplicator = mk
	defer func() { testReplicator = nil }()
	for name, fn := range map[string]func(*testing.T){
		"MemCommandsGoRedis":         TestMemCommandsGoRedis,
		"TxQueuesAndRunsAtExec":      TestTxQueuesAndRunsAtExec,
		"TxRunTimeErrorsAreElements": TestTxRunTimeErrorsAreElements,
		"TxExecAbort":                TestTxExecAbort,
		"TxMisuse":                   TestTxMisuse,
		"TxDiscard":                  TestTxDiscard,
		"TxNoInterleaving":           TestTxNoInterleaving,
	} {
		before := proposed.Load()
		t.Run(name, fn)
		if name != "TxMisuse" && name != "TxDiscard" && name != "TxExecAbort" && proposed.Load() == before {
			t.Errorf("%s: no command went through the replicator", name)
		}
	}
}

// refusingReplicator refuses every write, and counts reads it is asked
// about (ReadGate).
type refusingReplicator struct {
	reads    atomic.Int64
	readErr  error
	proposed atomic.Int64
}

func (r *refusingReplicator) Replicate(c *Ctx, cmd [][]byte) ([]byte, error) {
	r.proposed.Add(1)
	return nil, &ReplyError{Code: "TRYAGAIN", Msg: "no leader"}
}

func (r *refusingReplicator) BeforeRead(c *Ctx) error {
	r.reads.Add(1)
	return r.readErr
}

// TestReplicatorRefusalChangesNothing: a write the Replicator refuses is
// not run locally, its error is the reply; reads are gated, Local and
// connection commands are not proposed.
func TestReplicatorRefusalChangesNothing(t *testing.T) {
	ts, db := startMem(t)
	rep := &refusingReplicator{}
	ts.SetReplicator(rep)
	rdb := ts.client(t)
	ctx := context.Background()
	err := rdb.Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
		t.Fatalf("MEM.CREATE through a refusing replicator: %v", err)
	}
	if len(db.List()) != 0 {
		t.Fatalf("a refused write ran locally: %v", db.List())
	}
	// Reads run locally after the gate.
	if v := mustDo(t, rdb, "MEM.LIST"); len(v.([]any)) != 0 {
		t.Fatalf("MEM.LIST = %v", v)
	}
	if rep.reads.Load() != 1 {
		t.Fatalf("gate asked %d times, want 1", rep.reads.Load())
	}
	rep.readErr = NewError("not allowed here")
	wantErr(t, rdb, "not allowed here", "MEM.LIST")
	rep.readErr = nil
	// PING is not a memory read; MEM.CHECKPOINT is Local: neither is
	// gated or proposed.
	mustDo(t, rdb, "PING")
	mustDo(t, rdb, "MEM.CHECKPOINT")
	if rep.proposed.Load() != 1 || rep.reads.Load() != 2 {
		t.Fatalf("proposed %d, gated %d; want 1, 2", rep.proposed.Load(), rep.reads.Load())
	}
	// A transaction with a write is proposed whole, once.
	c := newTxConn(t, ts)
	c.do("MULTI\r\nMEM.CREATE k DIM 2\r\nMEM.LIST\r\nEXEC\r\n", "+OK\r\n+QUEUED\r\n+QUEUED\r\n-TRYAGAIN no leader\r\n")
	if rep.proposed.Load() != 2 || len(db.List()) != 0 {
		t.Fatalf("proposed %d, collections %v", rep.proposed.Load(), db.List())
	}
	// A transaction of reads runs locally, gated once.
	c.do("MULTI\r\nMEM.LIST\r\nPING\r\nEXEC\r\n", "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n*0\r\n+PONG\r\n")
	if rep.proposed.Load() != 2 || rep.reads.Load() != 3 {
		t.Fatalf("proposed %d, gated %d; want 2, 3", rep.proposed.Load(), rep.reads.Load())
	}
}

// TestApplyEntries: Apply of single commands, transaction entries and bad
// entries.
func TestApplyEntries(t *testing.T) {
	ts, db := startMem(t)
	s := ts.Server
	for _, tc := range []struct {
		cmd  [][]byte
		want string
	}{
		{bb("MEM.CREATE", "k", "DIM", "2"), "+OK\r\n"},
		{bb("mem.add", "k", "VALUES", "2", "1", "0", "ID", "5"), ":5\r\n"},
		{bb("NOSUCH", "x"), "-ERR unknown command 'NOSUCH', with args beginning with: 'x' \r\n"},
		{bb("MEM.ADD", "k"), "-ERR wrong number of arguments for 'mem.add' command\r\n"},
		{bb("MULTI"), "-ERR 'multi' cannot be replicated\r\n"},
		{nil, "-ERR replicated entry is malformed; nothing was applied\r\n"},
		{EncodeExec([][][]byte{bb("MEM.ADD", "k", "VALUES", "2", "0", "1", "ID", "6"), bb("PING"), bb("MEM.ADD", "nosuch", "VALUES", "1", "1")}),
			"*3\r\n:6\r\n+PONG\r\n-ERR "},
		{bb("EXEC", "2", "PING"), "-ERR replicated entry is malformed; nothing was applied\r\n"},
		{bb("EXEC", "x", "PING"), "-ERR replicated entry is malformed; nothing was applied\r\n"},
	} {
		got := s.Apply(tc.cmd)
		if !bytes.HasPrefix(got, []byte(tc.want)) {
			t.Errorf("Apply(%q) = %q, want %q…", tc.cmd, got, tc.want)
		}
	}
	if n := count(t, db, "k"); n != 2 {
		t.Fatalf("%d memories, want 2", n)
	}
	if cmds, ok := decodeExec(EncodeExec([][][]byte{bb("A", "b"), bb("C")})[1:]); !ok || len(cmds) != 2 || string(cmds[1][0]) != "C" {
		t.Fatalf("decodeExec round trip: %q %v", cmds, ok)
	}
}

func bb(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, x := range s {
		out[i] = []byte(x)
	}
	return out
}

// TestReplicatorConcurrentTx: transactions proposed from many connections
// through a replicator that applies under its own lock never deadlock with
// the connections' shared holds (the proposer lets go of txMu).
func TestReplicatorConcurrentTx(t *testing.T) {
	ts, db := startMem(t)
	var proposed atomic.Int64
	ts.SetReplicator(&localReplicator{s: ts.Server, proposed: &proposed})
	mustDo(t, ts.client(t), "MEM.CREATE", "k", "DIM", "2")
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := redis.NewClient(&redis.Options{Addr: ts.addr})
			defer rdb.Close()
			for j := 0; j < 20; j++ {
				_, err := rdb.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
					p.Do(context.Background(), "MEM.ADD", "k", "VALUES", 2, 1, 0)
					p.Do(context.Background(), "MEM.COUNT", "k")
					return nil
				})
				if err != nil && !errors.Is(err, redis.Nil) {
					t.Error(err)
					return
				}
				if err := rdb.Do(context.Background(), "MEM.ADD", "k", "VALUES", 2, 0, 1).Err(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := count(t, db, "k"); n != 8*20*2 {
		t.Fatalf("%d memories, want %d", n, 8*20*2)
	}
}

// TestReplicatedTxRefusesLocal: a transaction with a write is one
// replicated entry, so a Local command (one node's business) in it makes
// EXEC refuse it whole; Apply refuses a Local command outright.
func TestReplicatedTxRefusesLocal(t *testing.T) {
	ts, db := startMem(t)
	var proposed atomic.Int64
	ts.SetReplicator(&localReplicator{s: ts.Server, proposed: &proposed})
	c := newTxConn(t, ts)
	c.do("MULTI\r\nMEM.CREATE k DIM 2\r\nMEM.CHECKPOINT\r\nEXEC\r\n", "+OK\r\n+QUEUED\r\n+QUEUED\r\n"+
		"-ERR 'mem.checkpoint' acts on this node only and cannot be in a MULTI/EXEC with a write (the transaction is replicated whole); the transaction was discarded\r\n")
	if proposed.Load() != 0 || len(db.List()) != 0 {
		t.Fatalf("proposed %d, collections %v", proposed.Load(), db.List())
	}
	if got := string(ts.Apply(bb("MEM.CHECKPOINT"))); got != "-ERR 'mem.checkpoint' cannot be replicated\r\n" {
		t.Fatalf("Apply(MEM.CHECKPOINT) = %q", got)
	}
	// Without a write the transaction runs here, the Local command too.
	c.do("MULTI\r\nMEM.LIST\r\nMEM.CHECKPOINT\r\nEXEC\r\n", "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n*0\r\n+OK\r\n")
}
