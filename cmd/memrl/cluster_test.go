package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memrl/memrl/cluster"
	"github.com/redis/go-redis/v9"
)

// clusterBin builds memrl once for the cluster tests, which each start
// several processes of it.
func clusterBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "memrl-cluster-test")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "memrl")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// freePortRange returns a first port P such that P..P+n-1 and their raft
// ports are free on loopback (for now: another process may take one).
func freePortRange(t *testing.T, n int) int {
	t.Helper()
	for range 100 {
		p := 20000 + rand.Intn(25000)
		ok := true
		for i := range n {
			for _, port := range []int{p + i, p + i + cluster.RaftPortOffset} {
				ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
				if err != nil {
					ok = false
					break
				}
				ln.Close()
			}
		}
		if ok {
			return p
		}
	}
	t.Fatal("no free port range")
	return 0
}

// startTestCluster runs memrl cluster start and stops the cluster at the
// test's end.
func startTestCluster(t *testing.T, bin, dir string, shards, replicas int) []cluster.Node {
	t.Helper()
	port := freePortRange(t, shards*replicas)
	out, err := exec.Command(bin, "cluster", "start", "--dir", dir, "--shards", strconv.Itoa(shards),
		"--replicas", strconv.Itoa(replicas), "--port", strconv.Itoa(port), "--wait", "30s", "--", "--sync", "none").CombinedOutput()
	if err != nil {
		t.Fatalf("memrl cluster start: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(bin, "cluster", "stop", "--dir", dir).Run() })
	if !strings.Contains(string(out), "every shard accepts writes") {
		t.Fatalf("memrl cluster start said:\n%s", out)
	}
	nodes, err := cluster.ReadNodes(filepath.Join(dir, cluster.NodesFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != shards*replicas {
		t.Fatalf("nodes.tsv: %+v", nodes)
	}
	for i, n := range nodes {
		if n.Addr != "127.0.0.1:"+strconv.Itoa(port+i) || n.Shard != i/replicas || !processAlive(n.PID) {
			t.Fatalf("node %d: %+v", i, n)
		}
	}
	return nodes
}

// collectionIn returns a collection name whose slot slots gives to shard.
func collectionIn(slots *cluster.SlotMap, shard, i int) string {
	for j := 0; ; j++ {
		name := fmt.Sprintf("agent-%d-%d", i, j)
		if int(slots[cluster.HashSlot([]byte(name))]) == shard {
			return name
		}
	}
}

// TestClusterStartGoRedis starts a two-shard cluster with memrl cluster
// start and drives it with go-redis's ClusterClient unchanged: collections
// on both shards, adds, retrievals, rewards, a transaction; then a slot
// is given to the other shard (slots.tsv, CLUSTER RELOAD) and the client
// follows the MOVED. memrl cluster stop ends every node.
func TestClusterStartGoRedis(t *testing.T) {
	bin := clusterBin(t)
	dir := t.TempDir()
	nodes := startTestCluster(t, bin, dir, 2, 1)
	ctx := context.Background()
	// Once start returns, every node knows every shard's leader: a
	// command for any shard sent to any node is served or redirected,
	// never answered CLUSTERDOWN (start once probed through one node per
	// shard only, and a node that had not polled the others yet said
	// CLUSTERDOWN for ~250 ms).
	slots := cluster.DefaultSlots(2)
	for _, node := range nodes {
		rc := redis.NewClient(&redis.Options{Addr: node.Addr, MaxRetries: -1})
		for s := range 2 {
			err := rc.Do(ctx, "MEM.INFO", collectionIn(slots, s, 99)).Err()
			if err == nil || !(strings.HasPrefix(err.Error(), "MOVED ") || strings.Contains(err.Error(), "no such collection")) {
				t.Fatalf("right after start, node %s for shard %d: %v", node.ID, s, err)
			}
		}
		rc.Close()
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[1].Addr}})
	defer cc.Close()
	names := []string{collectionIn(slots, 0, 0), collectionIn(slots, 1, 0), collectionIn(slots, 0, 1), collectionIn(slots, 1, 1)}
	for _, n := range names {
		if err := cc.Do(ctx, "MEM.CREATE", n, "DIM", 2).Err(); err != nil {
			t.Fatalf("MEM.CREATE %s: %v", n, err)
		}
		id, err := cc.Do(ctx, "MEM.ADD", n, "VALUES", 2, 1, 0, "PAYLOAD", "p-"+n).Int()
		if err != nil {
			t.Fatal(err)
		}
		q, err := cc.Do(ctx, "MEM.REWARD", n, 1, id).Slice()
		if err != nil || len(q) != 1 {
			t.Fatalf("MEM.REWARD: %v %v", q, err)
		}
		res, err := cc.Do(ctx, "MEM.RETRIEVE", n, "VALUES", 2, 1, 0, "WITHPAYLOAD").Slice()
		if err != nil || len(res) != 1 || res[0].([]any)[4] != "p-"+n {
			t.Fatalf("MEM.RETRIEVE %s: %v %v", n, res, err)
		}
	}
	// Each node lists its own shard's collections only.
	for i, node := range nodes {
		rc := redis.NewClient(&redis.Options{Addr: node.Addr})
		got, err := rc.Do(ctx, "MEM.LIST").StringSlice()
		rc.Close()
		want := []string{names[i], names[i+2]}
		slices.Sort(want)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("MEM.LIST on %s = %v, %v; want %v", node.ID, got, err, want)
		}
	}
	cmds, err := cc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "MEM.ADD", names[0], "VALUES", 2, 0, 1)
		p.Do(ctx, "MEM.COUNT", names[0])
		return nil
	})
	if err != nil || cmds[1].(*redis.Cmd).Val() != int64(2) {
		t.Fatalf("MULTI/EXEC: %v %v", cmds, err)
	}

	// Give names[0]'s slot to shard 1 and tell every node.
	slot := cluster.HashSlot([]byte(names[0]))
	slots[slot] = 1
	if err := cluster.WriteSlots(filepath.Join(dir, cluster.SlotsFile), slots, 2); err != nil {
		t.Fatal(err)
	}
	for _, node := range nodes {
		rc := redis.NewClient(&redis.Options{Addr: node.Addr})
		err := rc.Do(ctx, "CLUSTER", "RELOAD").Err()
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	// The client still sends the slot to n0, which redirects it to n1:
	// the collection is created afresh there (data does not move yet).
	if err := cc.Do(ctx, "MEM.CREATE", names[0], "DIM", 2).Err(); err != nil {
		t.Fatalf("MEM.CREATE after the slot moved: %v", err)
	}
	rc1 := redis.NewClient(&redis.Options{Addr: nodes[1].Addr})
	defer rc1.Close()
	if got, _ := rc1.Do(ctx, "MEM.LIST").StringSlice(); !slices.Contains(got, names[0]) {
		t.Fatalf("n1 after the move: %v", got)
	}

	out, err := exec.Command(bin, "cluster", "stop", "--dir", dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "stopped 2 nodes") {
		t.Fatalf("memrl cluster stop: %v\n%s", err, out)
	}
	for _, n := range nodes {
		if processAlive(n.PID) {
			t.Fatalf("node %s (pid %d) still running", n.ID, n.PID)
		}
	}
	after, _ := cluster.ReadNodes(filepath.Join(dir, cluster.NodesFile))
	for _, n := range after {
		if n.PID != 0 {
			t.Fatalf("nodes.tsv after stop: %+v", after)
		}
	}
}

// redisPyCluster drives the cluster with redis-py's RedisCluster.
const redisPyCluster = `
import sys
from redis.cluster import RedisCluster, ClusterNode
host, port = sys.argv[1].split(":")
rc = RedisCluster(startup_nodes=[ClusterNode(host, int(port))], decode_responses=True)
names = sys.argv[2:]
for n in names:
    assert rc.execute_command("MEM.CREATE", n, "DIM", 2) in ("OK", True), n
    i = rc.execute_command("MEM.ADD", n, "VALUES", 2, 1, 0)
    q = rc.execute_command("MEM.REWARD", n, 1, i)
    assert len(q) == 1, q
    res = rc.execute_command("MEM.RETRIEVE", n, "VALUES", 2, 1, 0)
    assert len(res) == 1 and int(res[0][0]) == i, res
    assert rc.execute_command("MEM.COUNT", n) == 1
homes = {n: rc.get_node_from_key(n).port for n in names}
assert len(set(homes.values())) == 2, homes
print("ok", homes)
`

// TestClusterStartRedisPy drives a two-shard cluster with redis-py's
// RedisCluster (Debian's python3-redis, as scripts/test.sh installs it).
func TestClusterStartRedisPy(t *testing.T) {
	if _, err := exec.Command("/usr/bin/python3", "-c", "import redis.cluster").CombinedOutput(); err != nil {
		t.Fatalf("redis-py is missing (scripts/test.sh installs python3-redis): %v", err)
	}
	bin := clusterBin(t)
	nodes := startTestCluster(t, bin, t.TempDir(), 2, 1)
	slots := cluster.DefaultSlots(2)
	args := []string{"-c", redisPyCluster, nodes[0].Addr}
	for i := range 2 {
		args = append(args, collectionIn(slots, 0, i), collectionIn(slots, 1, i))
	}
	out, err := exec.Command("/usr/bin/python3", args...).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ok ") {
		t.Fatalf("redis-py RedisCluster: %v\n%s", err, out)
	}
}

// A cluster start that cannot complete (a port in use) stops what it
// started and says which node failed.
func TestClusterStartFailsCleanly(t *testing.T) {
	bin := clusterBin(t)
	dir := t.TempDir()
	port := freePortRange(t, 2)
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+1))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out, err := exec.Command(bin, "cluster", "start", "--dir", dir, "--shards", "2", "--port", strconv.Itoa(port), "--wait", "10s").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "node n1 exited") {
		t.Fatalf("cluster start with a port in use: %v\n%s", err, out)
	}
	nodes, err := cluster.ReadNodes(filepath.Join(dir, cluster.NodesFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.PID != 0 {
			t.Fatalf("nodes.tsv after a failed start: %+v", nodes)
		}
	}
	// n0 was killed: its port is free again soon.
	for deadline := time.Now().Add(5 * time.Second); ; {
		l, err := net.Listen("tcp", nodes[0].Addr)
		if err == nil {
			l.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n0 still holds its port: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cluster stop sends SIGKILL to a node that does not exit in time.
func TestClusterStopKillsAfterTimeout(t *testing.T) {
	bin := clusterBin(t)
	dir := t.TempDir()
	nodes := startTestCluster(t, bin, dir, 1, 1)
	// Stop the node so it cannot handle SIGTERM until continued.
	if err := syscall.Kill(nodes[0].PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "cluster", "stop", "--dir", dir, "--timeout", "300ms").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "n0 did not exit within 300ms and got SIGKILL") {
		t.Fatalf("cluster stop: %v\n%s", err, out)
	}
	for deadline := time.Now().Add(5 * time.Second); processAlive(nodes[0].PID); {
		if time.Now().After(deadline) {
			t.Fatal("node survived SIGKILL")
		}
		time.Sleep(10 * time.Millisecond)
	}

}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// --cluster-nodes and --node-id: both or neither; the node must be in the
// file; --addr comes from the file and may only repeat it.
func TestServeClusterFlags(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, cluster.NodesFile)
	if err := cluster.WriteNodes(path, []cluster.Node{{ID: "n0", Addr: "127.0.0.1:7000"}, {ID: "n1", Addr: "127.0.0.1:7001", Shard: 1}}); err != nil {
		t.Fatal(err)
	}
	noEnv := func(string) (string, bool) { return "", false }
	o, err := parseServeFlags([]string{"--cluster-nodes", path, "--node-id", "n1"}, noEnv)
	if err != nil || o.addr != "127.0.0.1:7001" || o.cfg.Addr != "127.0.0.1:7001" || !o.cluster.enabled() || o.cluster.node.Shard != 1 {
		t.Fatalf("parse: %+v, %v", o, err)
	}
	if o, err := parseServeFlags(nil, noEnv); err != nil || o.cluster.enabled() {
		t.Fatalf("standalone: %v", err)
	}
	if _, err := parseServeFlags([]string{"--cluster-nodes", path, "--node-id", "n1", "--addr", "127.0.0.1:7001"}, noEnv); err != nil {
		t.Fatalf("same --addr: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--node-id", "n0"}, "--node-id needs --cluster-nodes"},
		{[]string{"--cluster-nodes", path}, "--cluster-nodes needs --node-id"},
		{[]string{"--cluster-nodes", path, "--node-id", "n9"}, `--node-id "n9" is not in`},
		{[]string{"--cluster-nodes", path, "--node-id", "n0", "--addr", "127.0.0.1:7005"}, "differs from node n0's address"},
		{[]string{"--cluster-nodes", filepath.Join(dir, "nope"), "--node-id", "n0"}, "--cluster-nodes: "},
	} {
		if _, err := parseServeFlags(tc.args, noEnv); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// Without a replication layer a shard of several nodes is refused: each
// node would take writes alone; with it (package replica) memrl cluster
// start runs a shard of three as a raft group.
func TestClusterNeedsReplication(t *testing.T) {
	path := filepath.Join(t.TempDir(), cluster.NodesFile)
	if err := cluster.WriteNodes(path, []cluster.Node{{ID: "a", Addr: "127.0.0.1:1"}, {ID: "b", Addr: "127.0.0.1:2"}, {ID: "c", Addr: "127.0.0.1:3", Shard: 1}}); err != nil {
		t.Fatal(err)
	}
	topo, err := cluster.LoadTopology(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := needsReplication(topo, 0, false); !errors.Is(err, errNoReplication) {
		t.Fatalf("two nodes, no replication: %v", err)
	}
	if needsReplication(topo, 0, true) != nil || needsReplication(topo, 1, false) != nil {
		t.Fatal("refused a replicated shard or a shard of one")
	}
	// With replication built in, memrl cluster start runs a shard of
	// three as one raft group: one master, two slaves, and a write
	// through a cluster client is on every replica.
	bin := clusterBin(t)
	dir := t.TempDir()
	nodes := startTestCluster(t, bin, dir, 1, 3)
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].Addr}})
	defer cc.Close()
	if err := cc.Do(ctx, "MEM.CREATE", "replicated", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cc.Do(ctx, "MEM.ADD", "replicated", "VALUES", 2, 1, 0, "ID", 7).Err(); err != nil {
		t.Fatal(err)
	}
	out, err := cc.ClusterNodes(ctx).Result()
	if err != nil || strings.Count(out, "master") != 1 || strings.Count(out, "slave") != 2 {
		t.Fatalf("CLUSTER NODES: %v\n%s", err, out)
	}
	for _, n := range nodes {
		waitReplicaHas(t, n, "replicated", 7)
	}
}

// waitReplicaHas waits up to 10 s for node n's own copy (READONLY) of
// collection coll to hold memory id.
func waitReplicaHas(t *testing.T, n cluster.Node, coll string, id int) {
	t.Helper()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr})
	defer rdb.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		pipe := rdb.Pipeline()
		pipe.Do(ctx, "READONLY")
		get := pipe.Do(ctx, "MEM.GET", coll, id)
		pipe.Exec(ctx)
		if get.Err() == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: MEM.GET %s %d: %v", n.ID, coll, id, get.Err())
		}
	}
}

// redisPyFailover creates a collection through redis-py's RedisCluster,
// reports the port of the node serving its slot, waits for the test to
// SIGKILL that node (a line on stdin), then writes again until the shard's
// new leader accepts it (the client meets connection errors, MOVED to the
// dead node from survivors that have not yet seen the election, then MOVED
// to the new leader), and reports the new owner once the cluster's slot map
// names it.
const redisPyFailover = `
import sys, time
from redis.cluster import RedisCluster, ClusterNode
from redis.exceptions import RedisError
host, port = sys.argv[1].split(":")
name = sys.argv[2]
rc = RedisCluster(startup_nodes=[ClusterNode(host, int(port))], decode_responses=True)
assert rc.execute_command("MEM.CREATE", name, "DIM", 2) in ("OK", True)
rc.execute_command("MEM.ADD", name, "VALUES", 2, 1, 0)
before = rc.get_node_from_key(name).port
print("owner", before, flush=True)
sys.stdin.readline()
deadline, errors = time.time() + 30, 0
while True:
    try:
        rc.execute_command("MEM.ADD", name, "VALUES", 2, 0, 1)
        break
    except RedisError as e:
        errors += 1
        if time.time() > deadline:
            raise
        time.sleep(0.1)
assert rc.execute_command("MEM.COUNT", name) == 2
# The cached owner may still be the dead node (the last MOVED may have come
# from a survivor that had not yet seen the election); the cluster's slot
# map, read afresh, must name the new leader soon.
while True:
    rc.nodes_manager.initialize()
    after = rc.get_node_from_key(name).port
    if after != before:
        break
    if time.time() > deadline:
        raise AssertionError(("owner unchanged", before))
    time.sleep(0.1)
assert rc.execute_command("MEM.COUNT", name) == 2
print("ok", before, after, errors, flush=True)
`

// TestClusterFailoverRedisPy: on a cluster of 2 shards × 3 replicas,
// redis-py's RedisCluster keeps writing to a collection after the leader
// of its shard is killed with SIGKILL: the slot's owner changes to the
// new leader, which has the memory written before the kill.
func TestClusterFailoverRedisPy(t *testing.T) {
	if _, err := exec.Command("/usr/bin/python3", "-c", "import redis.cluster").CombinedOutput(); err != nil {
		t.Fatalf("redis-py is missing (scripts/test.sh installs python3-redis): %v", err)
	}
	bin := clusterBin(t)
	nodes := startTestCluster(t, bin, t.TempDir(), 2, 3)
	name := collectionIn(cluster.DefaultSlots(2), 1, 0)
	// Start from a node of the other shard, so the first request is
	// redirected too.
	cmd := exec.Command("/usr/bin/python3", "-c", redisPyFailover, nodes[0].Addr, name)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "owner ") {
		cmd.Wait()
		t.Fatalf("redis-py before the kill: %q\n%s", lines.Text(), stderr.String())
	}
	owner := strings.TrimPrefix(lines.Text(), "owner ")
	var victim *cluster.Node
	for i := range nodes {
		if strings.HasSuffix(nodes[i].Addr, ":"+owner) {
			victim = &nodes[i]
		}
	}
	if victim == nil || victim.Shard != 1 {
		t.Fatalf("redis-py says port %s serves %s; nodes %+v", owner, name, nodes)
	}
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, "go\n")
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "ok ") {
		cmd.Wait()
		t.Fatalf("redis-py after the kill: %q\n%s", lines.Text(), stderr.String())
	}
	t.Logf("redis-py: %s", lines.Text())
	if err := cmd.Wait(); err != nil {
		t.Fatalf("redis-py: %v\n%s", err, stderr.String())
	}
}

// TestClusterAddRemove: memrl cluster add joins a node to a running shard
// (it catches up and every router lists it), and memrl cluster remove
// takes the shard's leader out (the others elect a leader before it
// returns; writes go on through a cluster client; the process is
// stopped; nodes.tsv and CLUSTER NODES forget it).
func TestClusterAddRemove(t *testing.T) {
	bin := clusterBin(t)
	dir := t.TempDir()
	nodes := startTestCluster(t, bin, dir, 1, 3)
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].Addr}})
	defer cc.Close()
	if err := cc.Do(ctx, "MEM.CREATE", "grow", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cc.Do(ctx, "MEM.ADD", "grow", "VALUES", 2, 1, 0, "ID", 5).Err(); err != nil {
		t.Fatal(err)
	}
	port := freePortRange(t, 1)
	out, err := exec.Command(bin, "cluster", "add", "--dir", dir, "--shard", "0", "--port", strconv.Itoa(port), "--", "--sync", "none").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "added n3") {
		t.Fatalf("memrl cluster add: %v\n%s", err, out)
	}
	after, err := cluster.ReadNodes(filepath.Join(dir, cluster.NodesFile))
	if err != nil || len(after) != 4 || after[3].ID != "n3" || !processAlive(after[3].PID) {
		t.Fatalf("nodes.tsv after add: %+v, %v", after, err)
	}
	waitReplicaHas(t, after[3], "grow", 5) // the new node has caught up
	for _, n := range after {
		rc := redis.NewClient(&redis.Options{Addr: n.Addr})
		got, err := rc.ClusterNodes(ctx).Result()
		rc.Close()
		if err != nil || strings.Count(strings.TrimSpace(got), "\n") != 3 || !strings.Contains(got, after[3].Addr) {
			t.Fatalf("CLUSTER NODES on %s after add: %v\n%s", n.ID, err, got)
		}
	}

	// Remove the shard's leader.
	leader, err := shardLeader(ctx, after, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(bin, "cluster", "remove", "--dir", dir, "--node", leader.ID).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "removed "+leader.ID) {
		t.Fatalf("memrl cluster remove: %v\n%s", err, out)
	}
	if processAlive(leader.PID) {
		t.Fatalf("the removed node (pid %d) still runs", leader.PID)
	}
	rest, err := cluster.ReadNodes(filepath.Join(dir, cluster.NodesFile))
	if err != nil || len(rest) != 3 || slices.ContainsFunc(rest, func(n cluster.Node) bool { return n.ID == leader.ID }) {
		t.Fatalf("nodes.tsv after remove: %+v, %v", rest, err)
	}
	cc2 := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{rest[0].Addr}})
	defer cc2.Close()
	if err := cc2.Do(ctx, "MEM.ADD", "grow", "VALUES", 2, 0, 1, "ID", 6).Err(); err != nil {
		t.Fatalf("a write after the leader was removed: %v", err)
	}
	if n, err := cc2.Do(ctx, "MEM.COUNT", "grow").Int(); err != nil || n != 2 {
		t.Fatalf("MEM.COUNT = %d, %v", n, err)
	}
	got, err := cc2.ClusterNodes(ctx).Result()
	if err != nil || strings.Contains(got, leader.Addr) || strings.Count(got, "master") != 1 {
		t.Fatalf("CLUSTER NODES after remove: %v\n%s", err, got)
	}
}
