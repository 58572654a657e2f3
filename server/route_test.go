package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memrl/memrl/cluster"
	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
	"github.com/redis/go-redis/v9"
)

// testCluster is an in-process cluster: one Server and engine per node,
// no replication. Each shard's leader is a fake provider the test sets.
type testCluster struct {
	dir     string
	nodes   []cluster.Node
	srv     map[string]*Server
	db      map[string]*engine.DB
	state   map[string]*cluster.State
	leaders []*atomic.Pointer[string] // per shard: the id the fake provider reports
}

// startTestCluster starts one node per entry of shardOf (node i is "n<i>"
// in shard shardOf[i]); each shard's first node leads it.
func startTestCluster(t *testing.T, shardOf ...int) *testCluster {
	t.Helper()
	tc := &testCluster{dir: t.TempDir(), srv: map[string]*Server{}, db: map[string]*engine.DB{}, state: map[string]*cluster.State{}}
	lns := make([]net.Listener, len(shardOf))
	for i, s := range shardOf {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		tc.nodes = append(tc.nodes, cluster.Node{ID: fmt.Sprintf("n%d", i), Addr: ln.Addr().String(), Shard: s})
		for len(tc.leaders) <= s {
			tc.leaders = append(tc.leaders, new(atomic.Pointer[string]))
		}
		if tc.leaders[s].Load() == nil {
			id := fmt.Sprintf("n%d", i)
			tc.leaders[s].Store(&id)
		}
	}
	path := filepath.Join(tc.dir, cluster.NodesFile)
	if err := cluster.WriteNodes(path, tc.nodes); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for i, n := range tc.nodes {
		lp := tc.leaders[n.Shard]
		st, err := cluster.NewState(cluster.Config{NodesPath: path, Self: n.ID, PollInterval: 10 * time.Millisecond,
			Leader: func() (string, bool) {
				id := *lp.Load()
				return id, id != ""
			}})
		if err != nil {
			t.Fatal(err)
		}
		db, err := engine.Open(filepath.Join(tc.dir, n.ID), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		s := mustNew(t, Config{})
		s.RegisterMem(db)
		s.SetRouter(NewClusterRouter(ClusterConfig{State: st, Collections: db.List}))
		tc.srv[n.ID], tc.db[n.ID], tc.state[n.ID] = s, db, st
		serveErr := make(chan error, 1)
		go func() { serveErr <- s.Serve(lns[i]) }()
		t.Cleanup(func() {
			sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
			defer c()
			s.Shutdown(sctx)
			<-serveErr
			db.Close()
		})
	}
	for _, st := range tc.state {
		st.PollOnce(ctx)
		go st.Run(ctx)
	}
	return tc
}

// setLeader makes id the leader its shard's fake provider reports ("" for
// none), and waits until every node's poll has seen it.
func (tc *testCluster) setLeader(t *testing.T, shard int, id string) {
	t.Helper()
	tc.leaders[shard].Store(&id)
	deadline := time.Now().Add(5 * time.Second)
	for _, st := range tc.state {
		for {
			l, ok := st.Leader(shard)
			if (id == "" && !ok) || (ok && l.ID == id) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("leader of shard %d not seen as %q", shard, id)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func (tc *testCluster) client(t *testing.T, id string) *redis.Client {
	t.Helper()
	for _, n := range tc.nodes {
		if n.ID == id {
			c := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
			t.Cleanup(func() { c.Close() })
			return c
		}
	}
	t.Fatalf("no node %s", id)
	return nil
}

func (tc *testCluster) addr(id string) string {
	for _, n := range tc.nodes {
		if n.ID == id {
			return n.Addr
		}
	}
	return ""
}

// nameInShard returns a collection name whose slot the default slot map
// gives to shard (of shards), distinct for each i.
func nameInShard(shard, shards, i int) string {
	m := cluster.DefaultSlots(shards)
	for j := 0; ; j++ {
		name := fmt.Sprintf("coll-%d-%d", i, j)
		if int(m[cluster.HashSlot([]byte(name))]) == shard {
			return name
		}
	}
}

func TestClusterCommandsStandalone(t *testing.T) {
	ts := startServer(t, Config{}, nil)
	rc := ts.client(t)
	ctx := context.Background()
	for _, args := range [][]any{{"CLUSTER", "INFO"}, {"CLUSTER", "SLOTS"}, {"CLUSTER", "KEYSLOT", "x"}, {"READONLY"}, {"READWRITE"}, {"ASKING"}} {
		if err := rc.Do(ctx, args...).Err(); err == nil || err.Error() != "ERR This instance has cluster support disabled" {
			t.Errorf("%v: %v", args, err)
		}
	}
	if v, err := rc.Do(ctx, "ROLE").Slice(); err != nil || fmt.Sprint(v) != "[master 0 []]" {
		t.Fatalf("ROLE = %v, %v", v, err)
	}
	if s, err := rc.Info(ctx, "cluster").Result(); err != nil || !strings.Contains(s, "# Cluster\r\ncluster_enabled:0\r\n") {
		t.Fatalf("INFO cluster = %q, %v", s, err)
	}
}

// COMMAND gives every MEM.* command its collection as the one key (at 1),
// but MEM.LIST and MEM.CHECKPOINT none, and flags reads readonly: cluster
// clients route by these.
func TestCommandKeyPositions(t *testing.T) {
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ts := startServer(t, Config{}, func(s *Server) { s.RegisterMem(db) })
	info, err := ts.client(t).Command(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	keyed := []string{"mem.create", "mem.drop", "mem.add", "mem.retrieve", "mem.reward", "mem.get", "mem.del",
		"mem.info", "mem.verify", "mem.setattr", "mem.getattr", "mem.setpayload", "mem.setvector", "mem.expire", "mem.persist",
		"mem.ttl", "mem.madd", "mem.mget", "mem.scan", "mem.count", "mem.index", "mem.prune", "mem.history",
		"mem.config", "mem.snapshot", "mem.snapshots", "mem.rollback", "mem.delsnapshot", "mem.compact",
		"mem.mretrieve"}
	var mems []string
	for name := range info {
		if strings.HasPrefix(name, "mem.") {
			mems = append(mems, name)
		}
	}
	all := append(slices.Clone(keyed), "mem.list", "mem.checkpoint")
	slices.Sort(all)
	slices.Sort(mems)
	if !slices.Equal(all, mems) {
		t.Fatalf("MEM.* commands %v; this test knows %v: say where a new one's key is", mems, all)
	}
	for _, name := range keyed {
		ci := info[name]
		if ci.FirstKeyPos != 1 || ci.LastKeyPos != 1 || ci.StepCount != 1 {
			t.Errorf("%s: keys %d %d %d, want 1 1 1", name, ci.FirstKeyPos, ci.LastKeyPos, ci.StepCount)
		}
	}
	for _, name := range []string{"mem.list", "mem.checkpoint", "ping", "multi", "cluster", "info"} {
		if ci := info[name]; ci.FirstKeyPos != 0 || ci.LastKeyPos != 0 || ci.StepCount != 0 {
			t.Errorf("%s: keys %d %d %d, want none", name, ci.FirstKeyPos, ci.LastKeyPos, ci.StepCount)
		}
	}
	if !info["mem.get"].ReadOnly || info["mem.add"].ReadOnly || !slices.Contains(info["mem.add"].Flags, "write") {
		t.Fatalf("flags: mem.get %v, mem.add %v", info["mem.get"].Flags, info["mem.add"].Flags)
	}
}

func TestClusterMovedRaw(t *testing.T) {
	tc := startTestCluster(t, 0, 1)
	ctx := context.Background()
	c0 := tc.client(t, "n0")
	other := nameInShard(1, 2, 0)
	mine := nameInShard(0, 2, 0)
	slot := cluster.HashSlot([]byte(other))
	err := c0.Do(ctx, "MEM.CREATE", other, "DIM", 2).Err()
	if want := fmt.Sprintf("MOVED %d %s", slot, tc.addr("n1")); err == nil || err.Error() != want {
		t.Fatalf("write to the other shard: %v, want %s", err, want)
	}
	if err := c0.Do(ctx, "MEM.CREATE", mine, "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	// Keyless commands are served anywhere.
	if v, err := c0.Do(ctx, "MEM.LIST").StringSlice(); err != nil || !slices.Equal(v, []string{mine}) {
		t.Fatalf("MEM.LIST = %v, %v", v, err)
	}
	if n, err := c0.Do(ctx, "CLUSTER", "KEYSLOT", other).Int(); err != nil || n != slot {
		t.Fatalf("KEYSLOT = %d, %v", n, err)
	}
	s0 := cluster.HashSlot([]byte(mine))
	if n, err := c0.Do(ctx, "CLUSTER", "COUNTKEYSINSLOT", s0).Int(); err != nil || n != 1 {
		t.Fatalf("COUNTKEYSINSLOT = %d, %v", n, err)
	}
	if v, err := c0.Do(ctx, "CLUSTER", "GETKEYSINSLOT", s0, 10).StringSlice(); err != nil || !slices.Equal(v, []string{mine}) {
		t.Fatalf("GETKEYSINSLOT = %v, %v", v, err)
	}
	for _, args := range [][]any{{"CLUSTER", "COUNTKEYSINSLOT", 16384}, {"CLUSTER", "COUNTKEYSINSLOT", -1}, {"CLUSTER", "GETKEYSINSLOT", 1, -1}} {
		if err := c0.Do(ctx, args...).Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR Invalid slot") {
			t.Errorf("%v: %v", args, err)
		}
	}
	if id, err := c0.Do(ctx, "CLUSTER", "MYID").Text(); err != nil || id != cluster.HexID("n0") {
		t.Fatalf("MYID = %q, %v", id, err)
	}
	info, err := c0.ClusterInfo(ctx).Result()
	if err != nil || !strings.Contains(info, "cluster_state:ok\r\n") || !strings.Contains(info, "cluster_size:2\r\n") {
		t.Fatalf("CLUSTER INFO = %q, %v", info, err)
	}
	if s, err := c0.Info(ctx, "cluster", "server").Result(); err != nil || !strings.Contains(s, "cluster_enabled:1") || !strings.Contains(s, "redis_mode:cluster") {
		t.Fatalf("INFO cluster = %q, %v", s, err)
	}
}

func TestClusterSlotsShardsNodesShapes(t *testing.T) {
	tc := startTestCluster(t, 0, 1, 0) // n0, n2 in shard 0 (n0 leads), n1 in shard 1
	ctx := context.Background()
	c := tc.client(t, "n2")
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil || len(slots) != 2 {
		t.Fatalf("CLUSTER SLOTS = %v, %v", slots, err)
	}
	if s := slots[0]; s.Start != 0 || s.End != 8191 || len(s.Nodes) != 2 || s.Nodes[0].Addr != tc.addr("n0") ||
		s.Nodes[0].ID != cluster.HexID("n0") || s.Nodes[1].Addr != tc.addr("n2") {
		t.Fatalf("slots[0] = %+v", s)
	}
	if s := slots[1]; s.Start != 8192 || s.End != 16383 || len(s.Nodes) != 1 || s.Nodes[0].Addr != tc.addr("n1") {
		t.Fatalf("slots[1] = %+v", s)
	}
	shards, err := c.ClusterShards(ctx).Result()
	if err != nil || len(shards) != 2 || len(shards[0].Nodes) != 2 || shards[0].Nodes[0].Role != "master" ||
		shards[0].Nodes[1].Role != "replica" || shards[0].Slots[0] != (redis.SlotRange{Start: 0, End: 8191}) ||
		shards[1].Nodes[0].Endpoint != "127.0.0.1" || shards[1].Nodes[0].Health != "online" {
		t.Fatalf("CLUSTER SHARDS = %+v, %v", shards, err)
	}
	text, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("CLUSTER NODES = %q", text)
	}
	_, p0, _ := net.SplitHostPort(tc.addr("n0"))
	want0 := fmt.Sprintf("%s %s@%d master - 0 0 1 connected 0-8191", cluster.HexID("n0"), tc.addr("n0"), atoi(p0)+10000)
	if lines[0] != want0 {
		t.Fatalf("CLUSTER NODES line 1 = %q, want %q", lines[0], want0)
	}
	if f := strings.Fields(lines[2]); f[2] != "myself,slave" || f[3] != cluster.HexID("n0") || len(f) != 8 {
		t.Fatalf("CLUSTER NODES line 3 = %q", lines[2])
	}
	// ROLE: the leader says master with its peer; the other says slave
	// of the leader.
	if v, err := tc.client(t, "n0").Do(ctx, "ROLE").Slice(); err != nil || fmt.Sprint(v) != fmt.Sprintf("[master 0 [[127.0.0.1 %s 0]]]", portOf(tc.addr("n2"))) {
		t.Fatalf("ROLE on the leader = %v, %v", v, err)
	}
	if v, err := c.Do(ctx, "ROLE").Slice(); err != nil || fmt.Sprint(v) != fmt.Sprintf("[slave 127.0.0.1 %s connected 0]", p0) {
		t.Fatalf("ROLE on a follower = %v, %v", v, err)
	}
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// A follower redirects reads and writes to its leader, but serves reads
// of a READONLY connection itself; READWRITE ends that.
func TestClusterReadonlyFollower(t *testing.T) {
	tc := startTestCluster(t, 0, 0)
	ctx := context.Background()
	name := nameInShard(0, 1, 0)
	slot := cluster.HashSlot([]byte(name))
	if err := tc.client(t, "n0").Do(ctx, "MEM.CREATE", name, "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	// n1 holds its own (empty) engine: no replication here, so the
	// collection is created on it directly, for the read to find.
	if err := tc.db["n1"].Create(name, engine.NewConfig(2)); err != nil {
		t.Fatal(err)
	}
	c1 := tc.client(t, "n1")
	moved := fmt.Sprintf("MOVED %d %s", slot, tc.addr("n0"))
	if err := c1.Do(ctx, "MEM.INFO", name).Err(); err == nil || err.Error() != moved {
		t.Fatalf("read on a follower: %v, want %s", err, moved)
	}
	conn := c1.Conn()
	defer conn.Close()
	if err := conn.ReadOnly(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Do(ctx, "MEM.INFO", name).Err(); err != nil {
		t.Fatalf("READONLY read on a follower: %v", err)
	}
	if err := conn.Do(ctx, "MEM.ADD", name, "VALUES", 2, 1, 2).Err(); err == nil || err.Error() != moved {
		t.Fatalf("READONLY write on a follower: %v, want %s", err, moved)
	}
	if err := conn.ReadWrite(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Do(ctx, "MEM.INFO", name).Err(); err == nil || err.Error() != moved {
		t.Fatalf("read after READWRITE: %v, want %s", err, moved)
	}
	// No leader known: CLUSTERDOWN, which clients retry.
	tc.setLeader(t, 0, "")
	if err := c1.Do(ctx, "MEM.INFO", name).Err(); err == nil || !strings.HasPrefix(err.Error(), "CLUSTERDOWN ") {
		t.Fatalf("no leader: %v", err)
	}
	if info, _ := c1.ClusterInfo(ctx).Result(); !strings.Contains(info, "cluster_state:fail") {
		t.Fatalf("CLUSTER INFO without a leader: %q", info)
	}
}

// Inside MULTI a command for another shard is refused when queued (EXEC
// then aborts); at EXEC, keys in two slots give CROSSSLOT and nothing
// runs.
func TestClusterMultiExec(t *testing.T) {
	tc := startTestCluster(t, 0, 1)
	ctx := context.Background()
	a, b := nameInShard(0, 2, 0), nameInShard(0, 2, 1)
	if cluster.HashSlot([]byte(a)) == cluster.HashSlot([]byte(b)) {
		t.Fatal("test needs two slots")
	}
	c0 := tc.client(t, "n0")
	for _, n := range []string{a, b} {
		if err := c0.Do(ctx, "MEM.CREATE", n, "DIM", 2).Err(); err != nil {
			t.Fatal(err)
		}
	}
	ts := &testServer{addr: tc.addr("n0")}
	c := newTxConn(t, ts)
	other := nameInShard(1, 2, 0)
	slot := cluster.HashSlot([]byte(other))
	c.do("MULTI\r\nMEM.ADD "+a+" VALUES 2 1 2\r\nMEM.INFO "+other+"\r\nEXEC\r\n",
		fmt.Sprintf("+OK\r\n+QUEUED\r\n-MOVED %d %s\r\n-EXECABORT Transaction discarded because of previous errors.\r\n", slot, tc.addr("n1")))
	c.do("MULTI\r\nMEM.ADD "+a+" VALUES 2 1 2\r\nMEM.ADD "+b+" VALUES 2 1 2\r\nEXEC\r\n",
		"+OK\r\n+QUEUED\r\n+QUEUED\r\n-CROSSSLOT Keys in request don't hash to the same slot\r\n")
	if n, err := c0.Do(ctx, "MEM.COUNT", a).Int(); err != nil || n != 0 {
		t.Fatalf("an aborted transaction ran: count %d, %v", n, err)
	}
	// One collection (and keyless commands): runs.
	c.do("MULTI\r\nMEM.ADD "+a+" VALUES 2 1 2\r\nPING\r\nMEM.COUNT "+a+"\r\nEXEC\r\n",
		"+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n:1\r\n+PONG\r\n:1\r\n")
}

// go-redis's ClusterClient drives a two-shard cluster unchanged:
// collections on both shards, adds, retrievals, rewards, a transaction;
// then a shard's leader changes and the client follows the MOVED.
func TestClusterGoRedisClusterClient(t *testing.T) {
	tc := startTestCluster(t, 0, 1, 0) // shard 0: n0 (leader), n2; shard 1: n1
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{tc.addr("n1")}, MaxRedirects: 4})
	defer cc.Close()
	names := []string{nameInShard(0, 2, 0), nameInShard(1, 2, 0), nameInShard(0, 2, 1), nameInShard(1, 2, 1)}
	for _, n := range names {
		if err := cc.Do(ctx, "MEM.CREATE", n, "DIM", 2).Err(); err != nil {
			t.Fatalf("MEM.CREATE %s: %v", n, err)
		}
		id, err := cc.Do(ctx, "MEM.ADD", n, "VALUES", 2, 1, 0).Int()
		if err != nil {
			t.Fatalf("MEM.ADD %s: %v", n, err)
		}
		if err := cc.Do(ctx, "MEM.REWARD", n, 1, id).Err(); err != nil {
			t.Fatalf("MEM.REWARD %s: %v", n, err)
		}
		res, err := cc.Do(ctx, "MEM.RETRIEVE", n, "VALUES", 2, 1, 0).Slice()
		if err != nil || len(res) != 1 {
			t.Fatalf("MEM.RETRIEVE %s: %v, %v", n, res, err)
		}
	}
	// Each collection is on its own shard's leader and nowhere else.
	for i, n := range names {
		home := []string{"n0", "n1"}[i%2]
		for id, db := range tc.db {
			if has := slices.Contains(db.List(), n); has != (id == home) {
				t.Fatalf("%s on %s: %v (home %s)", n, id, has, home)
			}
		}
	}
	// A transaction on one collection.
	cmds, err := cc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "MEM.ADD", names[1], "VALUES", 2, 0, 1)
		p.Do(ctx, "MEM.COUNT", names[1])
		return nil
	})
	if err != nil || cmds[1].(*redis.Cmd).Val() != int64(2) {
		t.Fatalf("TxPipelined: %v, %v", cmds, err)
	}

	// Shard 0's leader moves to n2 (a failover, as the replication layer
	// would report it). The client still thinks n0 owns the slots: n0
	// answers MOVED to n2 and the client follows.
	tc.setLeader(t, 0, "n2")
	fresh := nameInShard(0, 2, 7)
	if err := cc.Do(ctx, "MEM.CREATE", fresh, "DIM", 2).Err(); err != nil {
		t.Fatalf("MEM.CREATE after the leader changed: %v", err)
	}
	if !slices.Contains(tc.db["n2"].List(), fresh) || slices.Contains(tc.db["n0"].List(), fresh) {
		t.Fatalf("after failover the write went to n0, not n2: n0 %v, n2 %v", tc.db["n0"].List(), tc.db["n2"].List())
	}
	if slots, _ := tc.client(t, "n1").ClusterSlots(ctx).Result(); slots[0].Nodes[0].Addr != tc.addr("n2") {
		t.Fatalf("CLUSTER SLOTS after failover: %+v", slots)
	}
}

// Editing slots.tsv and CLUSTER RELOAD moves a slot to another shard:
// its old owner answers MOVED, and a cluster client follows.
func TestClusterReloadMovesSlot(t *testing.T) {
	tc := startTestCluster(t, 0, 1)
	ctx := context.Background()
	name := nameInShard(0, 2, 3)
	slot := cluster.HashSlot([]byte(name))
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{tc.addr("n0")}})
	defer cc.Close()
	if err := cc.Do(ctx, "MEM.CREATE", name, "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	m := cluster.DefaultSlots(2)
	m[slot] = 1
	if err := cluster.WriteSlots(filepath.Join(tc.dir, cluster.SlotsFile), m, 2); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"n0", "n1"} {
		if err := tc.client(t, id).Do(ctx, "CLUSTER", "RELOAD").Err(); err != nil {
			t.Fatal(err)
		}
	}
	want := fmt.Sprintf("MOVED %d %s", slot, tc.addr("n1"))
	if err := tc.client(t, "n0").Do(ctx, "MEM.INFO", name).Err(); err == nil || err.Error() != want {
		t.Fatalf("after reload: %v, want %s", err, want)
	}
	// The collection itself did not move (resharding does not yet copy
	// data): the client is sent to n1, which does not have it.
	if err := cc.Do(ctx, "MEM.INFO", name).Err(); err == nil || !strings.Contains(err.Error(), "no such collection") {
		t.Fatalf("client after reload: %v", err)
	}
	if slots, _ := cc.ClusterSlots(ctx).Result(); len(slots) != 4 {
		t.Fatalf("CLUSTER SLOTS after moving one slot: %+v", slots)
	}
	// A bad file is refused and changes nothing.
	if err := writeFile(filepath.Join(tc.dir, cluster.SlotsFile), cluster.SlotsHeader+"\n0\t10\t0\n"); err != nil {
		t.Fatal(err)
	}
	if err := tc.client(t, "n0").Do(ctx, "CLUSTER", "RELOAD").Err(); err == nil || !strings.Contains(err.Error(), "slot 11 is given to no shard") {
		t.Fatalf("bad reload: %v", err)
	}
	if err := tc.client(t, "n0").Do(ctx, "MEM.INFO", name).Err(); err == nil || err.Error() != want {
		t.Fatalf("after a refused reload: %v, want %s", err, want)
	}
}

func writeFile(path, s string) error {
	return os.WriteFile(path, []byte(s), 0o644)
}

// MEM.LIST lists this node's collections; MEM.LIST CLUSTER asks every
// shard's leader and returns the union.
func TestClusterMemListCluster(t *testing.T) {
	tc := startTestCluster(t, 0, 1, 1) // n2 follows n1 in shard 1
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{tc.addr("n0")}})
	defer cc.Close()
	var all []string
	for i := range 3 {
		for s := range 2 {
			n := nameInShard(s, 2, i)
			all = append(all, n)
			if err := cc.Do(ctx, "MEM.CREATE", n, "DIM", 2).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	slices.Sort(all)
	for _, id := range []string{"n0", "n1", "n2"} {
		got, err := tc.client(t, id).Do(ctx, "MEM.LIST", "cluster").StringSlice()
		if err != nil || !slices.Equal(got, all) {
			t.Fatalf("MEM.LIST CLUSTER on %s = %v, %v; want %v", id, got, err, all)
		}
	}
	if got, _ := tc.client(t, "n0").Do(ctx, "MEM.LIST").StringSlice(); len(got) != 3 {
		t.Fatalf("MEM.LIST on n0 = %v, want its 3", got)
	}
	if err := tc.client(t, "n0").Do(ctx, "MEM.LIST", "x").Err(); err == nil || !strings.Contains(err.Error(), "wrong number of arguments") {
		t.Fatalf("MEM.LIST x: %v", err)
	}
	tc.setLeader(t, 1, "")
	if err := tc.client(t, "n0").Do(ctx, "MEM.LIST", "CLUSTER").Err(); err == nil || !strings.HasPrefix(err.Error(), "CLUSTERDOWN ") {
		t.Fatalf("MEM.LIST CLUSTER without a leader: %v", err)
	}
	if v, err := tc.client(t, "n2").Do(ctx, "HELLO", "2").Slice(); err != nil || v[9] != "cluster" || v[11] != "replica" {
		t.Fatalf("HELLO on a follower = %v, %v", v, err)
	}
}

func TestMemListClusterStandalone(t *testing.T) {
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ts := startServer(t, Config{}, func(s *Server) { s.RegisterMem(db) })
	if err := ts.client(t).Do(context.Background(), "MEM.LIST", "CLUSTER").Err(); err == nil || err.Error() != "ERR This instance has cluster support disabled" {
		t.Fatalf("MEM.LIST CLUSTER standalone: %v", err)
	}
}

// go-redis's ClusterClient with ReadOnly sends READONLY and routes the
// commands COMMAND flags readonly to a replica of the slot's shard, and
// the others to its leader.
func TestClusterGoRedisReadOnlyReplicas(t *testing.T) {
	tc := startTestCluster(t, 0, 1, 0) // shard 0: n0 leads, n2 follows
	ctx := context.Background()
	name := nameInShard(0, 2, 0)
	// No replication here: give the follower its own, different copy so
	// the answer shows which node served.
	if err := tc.db["n2"].Create(name, engine.NewConfig(2)); err != nil {
		t.Fatal(err)
	}
	c2 := tc.db["n2"]
	coll, err := c2.Collection(name)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := coll.Add(engine.AddRequest{Vector: []float32{1, 2}}); err != nil {
			t.Fatal(err)
		}
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{tc.addr("n0")}, ReadOnly: true})
	defer cc.Close()
	if err := cc.Do(ctx, "MEM.CREATE", name, "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cc.Do(ctx, "MEM.ADD", name, "VALUES", 2, 1, 2).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := cc.Do(ctx, "MEM.COUNT", name).Int(); err != nil || n != 5 {
		t.Fatalf("READONLY MEM.COUNT = %d, %v: want the follower's 5", n, err)
	}
	if n, _ := tc.client(t, "n0").Do(ctx, "MEM.COUNT", name).Int(); n != 1 {
		t.Fatalf("the leader holds %d, want the 1 written", n)
	}
}

// BenchmarkClusterRoute is the router's cost per command: a collection
// name's slot, the slot map, the leader check.
func BenchmarkClusterRoute(b *testing.B) {
	path := filepath.Join(b.TempDir(), cluster.NodesFile)
	if err := cluster.WriteNodes(path, []cluster.Node{{ID: "a", Addr: "127.0.0.1:1"}, {ID: "b", Addr: "127.0.0.1:2", Shard: 1}}); err != nil {
		b.Fatal(err)
	}
	st, err := cluster.NewState(cluster.Config{NodesPath: path, Self: "a"})
	if err != nil {
		b.Fatal(err)
	}
	r := NewClusterRouter(ClusterConfig{State: st})
	args := [][]byte{[]byte(nameInShard(0, 2, 0)), []byte("1"), []byte("7")}
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Route(nil, "mem.reward", args, true); err != nil {
			b.Fatal(err)
		}
	}
}
