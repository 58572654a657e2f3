package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/memrl/memrl/cluster"
	"github.com/memrl/memrl/internal/cliflag"
)

// memrl cluster start|stop|add|remove: a local cluster of `memrl serve` processes on
// loopback, to try cluster mode (docs/CLUSTER.md).

// clusterHelp follows the usage lines in clusterUsage.
const clusterHelp = `
start runs S×R memrl serve processes in the background on 127.0.0.1, client
ports P, P+1, … (raft ports 10000 above), node i in shard i/R, data in
DIR/<node-id>, logs in DIR/<node-id>.log; it writes DIR/nodes.tsv (node id,
client address, shard, pid) and returns once every shard accepts a write.
Flags after -- are passed to every memrl serve; with a password there
(--requirepass-file, $MEMRL_PASSWORD, --masterauth) start and add send it to
the nodes, over TLS if they speak it (remove, reshard and rebalance take the same flags after -- to
learn them). Unless those
flags or $MEMRL_CLUSTER_SECRET give a cluster secret or TLS, start makes
DIR/cluster.secret and passes it to every node for its raft port. A DIR
whose nodes are all stopped is started again with the nodes it names
(--shards, --replicas and --port are then ignored).

stop sends SIGTERM to every node of DIR/nodes.tsv, waits up to --timeout for
it to checkpoint and exit, then sends SIGKILL.

add starts one more node for shard S of a running cluster (--cluster-join),
has the shard's leader add it to the raft group (RAFT.ADD), waits until it
follows the leader, then adds it to nodes.tsv for every router (CLUSTER
RELOAD). remove has the shard's leader remove the node (RAFT.REMOVE), takes
it out of nodes.tsv and the routers, then stops it; its data folder stays.

add --new-shard starts a new shard: a raft group of R nodes (default: as
many as shard 0 has) with no slots. reshard moves N slots from shard S to
shard T (CLUSTER SETSLOT on both shards' leaders, then slots.tsv and CLUSTER
RELOAD on every node); only slots without collections can move for now.
rebalance gives every shard an even share of the slots, moving slots
without collections from the shards that have more.

Try it:  memrl cluster start --dir /tmp/c --shards 2 && redis-cli -c -p 7000

Flags:
`

// clusterCommands are memrl cluster's actions. They are set in init:
// their functions print clusterUsage, which reads this table (a literal
// would be an initialisation cycle).
var clusterCommands []subcommand

func init() {
	clusterCommands = []subcommand{
		{"start", "--dir DIR [--shards S] [--replicas R] [--port P] [-- serve flags...]", "", clusterStart},
		{"stop", "--dir DIR [--timeout 15s]", "", clusterStop},
		{"add", "--dir DIR (--shard S | --new-shard [--replicas R]) [--port P] [-- serve flags...]", "", clusterAddNodeOrShard},
		{"remove", "--dir DIR --node ID [--timeout 15s] [-- serve flags...]", "", clusterRemove},
		{"reshard", "--dir DIR --from S --to T --slots N [-- serve flags...]", "", clusterReshard}, // cluster_reshard.go
		{"rebalance", "--dir DIR [-- serve flags...]", "", clusterRebalance},                       // cluster_rebalance.go
	}
	commands["cluster"] = clusterCmd
}

// clusterAddNodeOrShard is memrl cluster add: one more node for a shard
// (--shard), or a new shard (--new-shard).
func clusterAddNodeOrShard(args []string) error {
	if slices.ContainsFunc(args, func(a string) bool { return a == "--new-shard" || a == "-new-shard" }) {
		return clusterAddShard(args) // cluster_reshard.go
	}
	return clusterAdd(args)
}

// clusterUsage is memrl cluster --help's text, and every action's.
func clusterUsage() string {
	return "usage:\n" + columns(usageRows("memrl cluster", clusterCommands)) + clusterHelp
}

func clusterCmd(args []string) error {
	want := strings.ReplaceAll(names(clusterCommands), "|", ", ")
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, clusterUsage())
		return cliflag.Usagef("which action: %s?", want)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Print(clusterUsage())
		return cliflag.ErrHelp
	}
	if a, ok := lookup(clusterCommands, args[0]); ok {
		return a.run(args[1:])
	}
	return cliflag.Usagef("unknown action %q: want %s", args[0], want)
}

// startOptions are memrl cluster start's flags.
type startOptions struct {
	dir       string
	shards    int
	replicas  int
	port      int
	wait      time.Duration
	serveArgs []string // after --
}

func clusterStart(args []string) error {
	o := startOptions{}
	var serveArgs []string
	for i, a := range args {
		if a == "--" {
			args, serveArgs = args[:i], args[i+1:]
			break
		}
	}
	fs := flag.NewFlagSet("cluster start", flag.ContinueOnError)
	fs.StringVar(&o.dir, "dir", "", "the cluster's folder (created if missing)")
	fs.IntVar(&o.shards, "shards", 2, "shards")
	fs.IntVar(&o.replicas, "replicas", 1, "nodes per shard (a raft group when more than 1)")
	fs.IntVar(&o.port, "port", 7000, "client port of the first node; node i listens on port+i")
	fs.DurationVar(&o.wait, "wait", 60*time.Second, "how long to wait for every shard to accept a write")
	fs.Usage = func() { fmt.Fprint(fs.Output(), clusterUsage()); fs.PrintDefaults() }
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return err
	}
	o.serveArgs = serveArgs
	if o.dir == "" {
		return cliflag.Usagef("--dir is required")
	}
	var err error
	if nodeAuth, err = toolAuth(serveArgs, os.LookupEnv); err != nil { // cluster_security.go
		return cliflag.Usagef("%v", err)
	}
	n := o.shards * o.replicas
	switch {
	case o.shards < 1 || o.shards > cluster.NumSlots:
		return cliflag.Usagef("--shards must be in 1..%d", cluster.NumSlots)
	case o.replicas < 1 || o.replicas > 9:
		return cliflag.Usagef("--replicas must be in 1..9")
	case o.port < 1 || o.port+n-1+cluster.RaftPortOffset > 65535:
		return cliflag.Usagef("--port %d: the ports %d..%d and their raft ports (+%d) must be at most 65535", o.port, o.port, o.port+n-1, cluster.RaftPortOffset)
	}
	for _, a := range serveArgs {
		for _, reserved := range []string{"dir", "addr", "cluster-nodes", "node-id"} {
			if a == "-"+reserved || a == "--"+reserved || strings.HasPrefix(a, "--"+reserved+"=") || strings.HasPrefix(a, "-"+reserved+"=") {
				return cliflag.Usagef("memrl cluster start sets --%s of each node itself", reserved)
			}
		}
	}
	return startCluster(o, os.Stdout)
}

// startCluster starts the nodes of o and waits for every shard. On a
// failure it stops the nodes it started.
func startCluster(o startOptions, out *os.File) error {
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	var err error
	if o.serveArgs, err = withClusterSecret(o.dir, o.serveArgs, os.LookupEnv, true); err != nil {
		return err
	}
	nodesPath := filepath.Join(o.dir, cluster.NodesFile)
	nodes, err := cluster.ReadNodes(nodesPath)
	switch {
	case err == nil:
		for _, n := range nodes {
			if processAlive(n.PID) {
				return fmt.Errorf("node %s (pid %d) of %s is running: memrl cluster stop --dir %s first", n.ID, n.PID, nodesPath, o.dir)
			}
		}
	case errors.Is(err, os.ErrNotExist):
		for i := range o.shards * o.replicas {
			nodes = append(nodes, cluster.Node{ID: "n" + strconv.Itoa(i), Addr: "127.0.0.1:" + strconv.Itoa(o.port+i), Shard: i / o.replicas})
		}
	default:
		return err
	}
	for i := range nodes {
		nodes[i].PID = 0
	}
	// The nodes read the file as they start; pids are added once known.
	if err := cluster.WriteNodes(nodesPath, nodes); err != nil {
		return err
	}
	var procs []int
	fail := func(err error) error {
		for _, pid := range procs {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		for i := range nodes {
			nodes[i].PID = 0
		}
		cluster.WriteNodes(nodesPath, nodes)
		return err
	}
	for i, n := range nodes {
		pid, err := startNode(o.dir, nodesPath, n, o.serveArgs)
		if err != nil {
			return fail(err)
		}
		procs = append(procs, pid)
		nodes[i].PID = pid
	}
	if err := cluster.WriteNodes(nodesPath, nodes); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.wait)
	defer cancel()
	slots, err := cluster.ReadSlots(filepath.Join(o.dir, cluster.SlotsFile), cluster.Shards(nodes))
	if err != nil {
		return fail(err)
	}
	// Every shard, through every node: each node must know every
	// shard's leader before a client may pick any of them.
	exited := func() error {
		for _, n := range nodes {
			if !processAlive(n.PID) {
				logPath := filepath.Join(o.dir, n.ID+".log")
				return fmt.Errorf("node %s exited: see %s; its last line: %s", n.ID, logPath, lastLine(logPath))
			}
		}
		return nil
	}
	for s := range cluster.Shards(nodes) {
		if len(slots.Ranges(s)) == 0 { // a shard added with no slots yet: no write can reach it
			if _, err := shardLeader(ctx, nodes, s); err != nil {
				return fail(err)
			}
			continue
		}
		if err := probeShard(ctx, nodes, slots, s, exited); err != nil {
			return fail(err)
		}
	}
	fmt.Fprintf(out, "memrl cluster: %d shards, %d nodes, every shard accepts writes\n", cluster.Shards(nodes), len(nodes))
	for _, n := range nodes {
		fmt.Fprintf(out, "  %s\t%s\tshard %d\tpid %d\n", n.ID, n.Addr, n.Shard, n.PID)
	}
	fmt.Fprintf(out, "nodes file %s; try: redis-cli -c -p %s; stop: memrl cluster stop --dir %s\n",
		nodesPath, strings.TrimPrefix(nodes[0].Addr, "127.0.0.1:"), o.dir)
	return nil
}

// probeShard waits until shard accepts a write sent to any node: through
// each node in turn it creates and drops a collection whose name hashes
// to the shard, following MOVED, retrying on CLUSTERDOWN (the node does
// not know the shard's leader yet) and refused connections until ctx
// ends or exited reports a node gone.
func probeShard(ctx context.Context, nodes []cluster.Node, slots *cluster.SlotMap, shard int, exited func() error) error {
	name := ""
	for j := 0; ; j++ {
		name = "memrl-probe-" + strconv.Itoa(j)
		if int(slots[cluster.HashSlot([]byte(name))]) == shard {
			break
		}
	}
	for _, n := range nodes {
		var last error
		for {
			if ctx.Err() != nil {
				return fmt.Errorf("shard %d did not accept a write through node %s in time: %v", shard, n.ID, last)
			}
			if err := exited(); err != nil {
				return err
			}
			last = redirected(ctx, n.Addr, "MEM.CREATE", name, "DIM", "1")
			if last == nil || strings.Contains(last.Error(), "already exists") {
				if last = redirected(ctx, n.Addr, "MEM.DROP", name); last == nil {
					break
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// redirected sends a command to addr, following up to 5 MOVED redirects.
func redirected(ctx context.Context, addr string, args ...string) error {
	for range 5 {
		_, err := nodeAuth.Do(ctx, addr, 2*time.Second, args...)
		var re cluster.RedisError
		if errors.As(err, &re) && strings.HasPrefix(string(re), "MOVED ") {
			f := strings.Fields(string(re))
			if len(f) == 3 {
				addr = f[2]
				continue
			}
		}
		return err
	}
	return errors.New("too many redirects")
}

func clusterStop(args []string) error {
	fs := flag.NewFlagSet("cluster stop", flag.ContinueOnError)
	dir := fs.String("dir", "", "the cluster's folder")
	timeout := fs.Duration("timeout", 15*time.Second, "how long each node may take to exit after SIGTERM before it gets SIGKILL")
	fs.Usage = func() { fmt.Fprint(fs.Output(), clusterUsage()); fs.PrintDefaults() }
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return err
	}
	if *dir == "" {
		return cliflag.Usagef("--dir is required")
	}
	nodesPath := filepath.Join(*dir, cluster.NodesFile)
	nodes, err := cluster.ReadNodes(nodesPath)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if processAlive(n.PID) && isNodeProcess(n) {
			syscall.Kill(n.PID, syscall.SIGTERM)
		}
	}
	deadline := time.Now().Add(*timeout)
	var killed []string
	for _, n := range nodes {
		for processAlive(n.PID) && isNodeProcess(n) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if processAlive(n.PID) && isNodeProcess(n) {
			syscall.Kill(n.PID, syscall.SIGKILL)
			killed = append(killed, n.ID)
		}
	}
	for i := range nodes {
		nodes[i].PID = 0
	}
	if err := cluster.WriteNodes(nodesPath, nodes); err != nil {
		return err
	}
	if len(killed) > 0 {
		fmt.Printf("memrl cluster: stopped; %s did not exit within %s and got SIGKILL\n", strings.Join(killed, ", "), *timeout)
	} else {
		fmt.Printf("memrl cluster: stopped %d nodes\n", len(nodes))
	}
	return nil
}

// processAlive reports whether pid names a running process (a zombie, one
// that has exited but not been reaped, counts as gone).
func processAlive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) // no /proc: trust kill
	}
	// The state follows the command name in parentheses.
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

// isNodeProcess reports whether the process pid is still n's memrl serve
// (its command line names n's --node-id), so that stop never signals a
// process that reused a pid. Without /proc it trusts the pid.
func isNodeProcess(n cluster.Node) bool {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(n.PID) + "/cmdline")
	if err != nil {
		return errors.Is(err, os.ErrNotExist) && !dirExists("/proc/self")
	}
	return strings.Contains(string(cmdline), "\x00--node-id\x00"+n.ID+"\x00") ||
		strings.HasSuffix(string(cmdline), "\x00--node-id\x00"+n.ID)
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// lastLine returns the last non-blank line of the file at path, or "".
func lastLine(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
