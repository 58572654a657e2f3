package replica

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestMembership: a node started without bootstrapping joins with
// RAFT.ADD on the leader, catches up, votes, and leaves with RAFT.REMOVE;
// a follower refuses both; RAFT.STATUS reports roles and members.
func TestMembership(t *testing.T) {
	nodes := startGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	rdb := leader.client(t)
	if err := rdb.Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	fill(t, leader, 1, 50)

	// The joiner holds the group's secret (helpers_test.go, groupSecurity).
	js, err := tcpStream(leader.sec)
	if err != nil {
		t.Fatal(err)
	}
	joiner := &testNode{id: "n4", dir: filepath.Join(t.TempDir(), "n4"), stream: js, sec: leader.sec, raftAddr: js.Addr().String()}
	joiner.start(t, nil) // no peers: never bootstraps
	t.Cleanup(func() { joiner.stop(t) })
	all := append(nodes, joiner)

	var follower *testNode
	for _, tn := range nodes {
		if tn != leader {
			follower = tn
		}
	}
	if err := follower.client(t).Do(ctx, "RAFT.ADD", "n4", joiner.addr, joiner.raftAddr).Err(); err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
		t.Fatalf("RAFT.ADD on a follower: %v", err)
	}
	for _, bad := range [][]any{{"RAFT.ADD", "n4", "nohostport"}, {"RAFT.ADD", "n4", joiner.addr, "bad"}, {"RAFT.ADD", "n4", "a:1", "b:2", "c"}} {
		if err := rdb.Do(ctx, bad...).Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR") {
			t.Fatalf("%v: %v", bad, err)
		}
	}
	if err := rdb.Do(ctx, "RAFT.ADD", "n4", joiner.addr, joiner.raftAddr).Err(); err != nil {
		t.Fatal(err)
	}
	fill(t, leader, 100, 10)
	sameState(t, leader, all)
	st, err := rdb.Do(ctx, "RAFT.STATUS").Slice()
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for i := 0; i+1 < len(st); i += 2 {
		status[st[i].(string)] = st[i+1].(string)
	}
	if status["role"] != "leader" || status["node_id"] != leader.id || !strings.Contains(status["members"], "n4="+joiner.raftAddr) {
		t.Fatalf("RAFT.STATUS = %v", status)
	}
	if err := joiner.client(t).Do(ctx, "RAFT.STATUS").Err(); err != nil {
		t.Fatal(err)
	}
	// INFO replication: Redis's role, and raft's.
	if info, err := rdb.Info(ctx, "replication").Result(); err != nil || !strings.Contains(info, "role:master") || !strings.Contains(info, "raft_leader_id:"+leader.id) {
		t.Fatalf("leader's INFO replication: %v\n%s", err, info)
	}
	if info, err := joiner.client(t).Info(ctx, "replication").Result(); err != nil || !strings.Contains(info, "role:slave") || !strings.Contains(info, "raft_state:follower") {
		t.Fatalf("joiner's INFO replication: %v\n%s", err, info)
	}
	if id, ok := joiner.node.Leader(); !ok || id != leader.id {
		t.Fatalf("joiner's leader: %q %v", id, ok)
	}
	if err := rdb.Do(ctx, "RAFT.REMOVE", "n4").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		f := leader.node.Raft().GetConfiguration()
		if err := f.Error(); err != nil {
			t.Fatal(err)
		}
		if len(f.Configuration().Servers) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n4 still a member: %v", f.Configuration().Servers)
		}
		time.Sleep(20 * time.Millisecond)
	}
	fill(t, leader, 200, 5)
	sameState(t, leader, nodes)
}

// TestAdminCommandsBesideTransactions: RAFT.SNAPSHOT waits for raft's
// FSM goroutine, which may be applying an EXEC entry (holding the
// server's transaction lock exclusively): the command must not hold the
// lock shared while it waits, or both wait forever.
func TestAdminCommandsBesideTransactions(t *testing.T) {
	nodes := startGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	rdb := leader.client(t)
	if err := rdb.Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			for {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, 0)
					p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 0, 1)
					return nil
				}); err != nil {
					done <- err
					return
				}
			}
		}()
	}
	finished := make(chan error, 1)
	go func() {
		for i := 0; i < 20; i++ {
			if err := rdb.Do(ctx, "RAFT.SNAPSHOT").Err(); err != nil && !strings.Contains(err.Error(), "nothing new") {
				finished <- err
				return
			}
		}
		finished <- nil
	}()
	select {
	case err := <-finished:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("RAFT.SNAPSHOT beside transactions did not finish: deadlock")
	}
	close(stop)
	for i := 0; i < 4; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestRaftCommandsInsideMulti: RAFT.SNAPSHOT, RAFT.ADD and RAFT.REMOVE
// wait for raft's FSM goroutine, which an EXEC holding the transaction
// lock (or an EXEC entry applied by that goroutine itself) would block
// forever: inside MULTI they are refused, and a transaction with a write
// and such a command is refused whole.
func TestRaftCommandsInsideMulti(t *testing.T) {
	nodes := startGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	rdb := leader.client(t)
	if err := rdb.Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		cmds, _ := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "MEM.COUNT", "k")
			p.Do(ctx, "RAFT.SNAPSHOT")
			return nil
		})
		if len(cmds) != 2 || cmds[0].Err() != nil || cmds[1].Err() == nil || !strings.Contains(cmds[1].Err().Error(), "MULTI") {
			t.Errorf("reads and RAFT.SNAPSHOT in MULTI: %v", cmds)
		}
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, 0)
			p.Do(ctx, "RAFT.REMOVE", "n9")
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), "MULTI") {
			t.Errorf("a write and RAFT.REMOVE in MULTI: %v", err)
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("deadlock")
	}
	if n, err := rdb.Do(ctx, "MEM.COUNT", "k").Int(); err != nil || n != 0 {
		t.Fatalf("MEM.COUNT = %d, %v: the refused transaction ran", n, err)
	}
}
