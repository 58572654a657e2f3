package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/cluster"
)

// TestClusterStartWithPassword: memrl cluster start … -- --requirepass
// starts (its probes and the nodes' ROLE polls authenticate), makes a
// cluster secret (DIR/cluster.secret, 0600) that every node's raft
// transport requires, and the cluster routes: go-redis's ClusterClient
// with the password reaches both shards, MEM.LIST CLUSTER lists them,
// a node answers -MOVED for the other shard, hash-tagged collections
// share a slot and one MULTI/EXEC. hashicorp/raft's own transport gets
// nothing from a node's raft port.
func TestClusterStartWithPassword(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 4 processes")
	}
	bin := clusterBin(t)
	dir := t.TempDir()
	port := freePortRange(t, 4)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, clusterSecretEnv+"=") && !strings.HasPrefix(kv, passwordEnv+"=") && !strings.HasPrefix(kv, masterAuthEnv+"=") {
			env = append(env, kv)
		}
	}
	start := exec.Command(bin, "cluster", "start", "--dir", dir, "--shards", "2", "--replicas", "2", "--port", strconv.Itoa(port),
		"--wait", "60s", "--", "--sync", "none", "--requirepass", "s3cret-pw")
	start.Env = env
	out, err := start.CombinedOutput()
	t.Cleanup(func() {
		stop := exec.Command(bin, "cluster", "stop", "--dir", dir)
		stop.Env = env
		stop.Run()
	})
	if err != nil || !strings.Contains(string(out), "every shard accepts writes") {
		t.Fatalf("memrl cluster start with --requirepass: %v\n%s", err, out)
	}
	st, err := os.Stat(filepath.Join(dir, clusterSecretFile))
	if err != nil || st.Mode().Perm() != 0o600 || st.Size() != 65 {
		t.Fatalf("cluster secret file: %v %v", st, err)
	}
	nodes, err := cluster.ReadNodes(filepath.Join(dir, cluster.NodesFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(n.PID) + "/cmdline")
		if !strings.Contains(string(cmdline), "--cluster-secret-file\x00"+filepath.Join(dir, clusterSecretFile)) {
			t.Fatalf("node %s runs without the secret file: %q", n.ID, cmdline)
		}
	}
	ctx := context.Background()
	client := func(n cluster.Node) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: n.Addr, Password: "s3cret-pw", MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		return c
	}

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].Addr}, Password: "s3cret-pw"})
	defer cc.Close()
	slots := cluster.DefaultSlots(2)
	names := []string{collectionIn(slots, 0, 0), collectionIn(slots, 1, 0), "{agent7}.plans", "{agent7}.notes"}
	for _, n := range names {
		if err := cc.Do(ctx, "MEM.CREATE", n, "DIM", 2).Err(); err != nil {
			t.Fatalf("MEM.CREATE %s: %v", n, err)
		}
	}
	if cluster.HashSlot([]byte(names[2])) != cluster.HashSlot([]byte(names[3])) {
		t.Fatal("hash-tagged names in two slots")
	}
	cmds, err := cc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "MEM.ADD", "{agent7}.plans", "VALUES", 2, 1, 0)
		p.Do(ctx, "MEM.ADD", "{agent7}.notes", "VALUES", 2, 0, 1)
		p.Do(ctx, "MEM.ADD", "{agent7}.notes", "VALUES", 2, 1, 1)
		p.Do(ctx, "MEM.COUNT", "{agent7}.notes")
		return nil
	})
	if err != nil || cmds[3].(*redis.Cmd).Val() != int64(2) {
		t.Fatalf("MULTI/EXEC over {agent7}.plans and {agent7}.notes: %v %v", cmds, err)
	}
	if err := cc.Do(ctx, "MEM.CREATE", "{agent7} plans", "DIM", 2).Err(); err == nil || !strings.Contains(err.Error(), "invalid collection name") {
		t.Fatalf("a name with a space: %v", err)
	}

	// Every node: ROLE, MEM.LIST CLUSTER (asks the other shard's
	// leader, with the password), and -MOVED for the other shard.
	want := slices.Clone(names)
	slices.Sort(want)
	for _, n := range nodes {
		rc := client(n)
		role, err := rc.Do(ctx, "ROLE").Slice()
		if err != nil || len(role) == 0 {
			t.Fatalf("ROLE on %s: %v %v", n.ID, role, err)
		}
		var got []string
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, err = rc.Do(ctx, "MEM.LIST", "CLUSTER").StringSlice()
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond) // CLUSTERDOWN while a poll round is due
		}
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("MEM.LIST CLUSTER on %s = %v, %v; want %v", n.ID, got, err, want)
		}
		other := names[1-n.Shard]
		if err := rc.Do(ctx, "MEM.INFO", other).Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
			t.Fatalf("MEM.INFO %s on %s (shard %d): %v", other, n.ID, n.Shard, err)
		}
	}
	if err := redis.NewClient(&redis.Options{Addr: nodes[0].Addr}).Do(ctx, "ROLE").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("ROLE without the password: %v", err)
	}

	// A raft transport without the secret: its AppendEntries of a
	// higher term fails and the node's term stays.
	status := func(n cluster.Node) map[string]string {
		kv, err := client(n).Do(ctx, "RAFT.STATUS").StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	before := status(nodes[1])
	term, _ := strconv.ParseUint(before["raft_term"], 10, 64)
	tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 3*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	err = tr.AppendEntries(raft.ServerID(nodes[1].ID), raft.ServerAddress(cluster.RaftAddr(nodes[1].Addr)),
		&raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("x"), Addr: []byte(tr.LocalAddr())},
			Term: term + 100}, &raft.AppendEntriesResponse{})
	if err == nil {
		t.Fatal("an AppendEntries without the cluster secret was answered")
	}
	if after := status(nodes[1]); after["raft_term"] != before["raft_term"] {
		t.Fatalf("term %s before, %s after", before["raft_term"], after["raft_term"])
	}
}

// The node security flags: the secret from one place, at least 16 bytes;
// a raft port beyond loopback needs a secret or cluster TLS unless
// --protected-mode no; the AUTH sent to other nodes is --masterauth, else
// $MEMRL_MASTERAUTH, else the default user's password.
func TestServeSecurityFlags(t *testing.T) {
	dir := t.TempDir()
	local := filepath.Join(dir, "local.tsv")
	remote := filepath.Join(dir, "remote.tsv")
	if err := cluster.WriteNodes(local, []cluster.Node{{ID: "n0", Addr: "127.0.0.1:7000"}}); err != nil {
		t.Fatal(err)
	}
	if err := cluster.WriteNodes(remote, []cluster.Node{{ID: "n0", Addr: "10.1.2.3:7000"}}); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(dir, "secret")
	os.WriteFile(secretFile, []byte("from-a-file-0123456789\n"), 0o600)
	env := func(kv ...string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1], true
				}
			}
			return "", false
		}
	}
	secret := "0123456789abcdef"
	for _, tc := range []struct {
		args []string
		env  func(string) (string, bool)
		want string // "" for success
		// wantSecret and wantAuth are checked on success.
		wantSecret string
		wantAuth   cluster.Auth
	}{
		{args: []string{"--cluster-nodes", local, "--node-id", "n0"}, env: env()},
		{args: []string{"--cluster-nodes", local, "--node-id", "n0", "--cluster-secret", "short"}, env: env(), want: "at least 16 bytes"},
		{args: []string{"--cluster-nodes", local, "--node-id", "n0", "--cluster-secret", secret, "--cluster-secret-file", secretFile}, env: env(), want: "give the cluster secret once"},
		{args: []string{"--cluster-nodes", local, "--node-id", "n0", "--cluster-secret-file", secretFile}, env: env(), wantSecret: "from-a-file-0123456789"},
		{args: []string{"--cluster-nodes", local, "--node-id", "n0"}, env: env(clusterSecretEnv, secret), wantSecret: secret},
		{args: []string{"--cluster-nodes", local, "--node-id", "n0"}, env: env(clusterSecretEnv, ""), want: "set but empty"},
		{args: []string{"--cluster-nodes", local, "--node-id", "n0", "--cluster-tls-cert", "x.pem"}, env: env(), want: "--cluster-tls-cert"},
		// Beyond loopback: the clients' password is not enough.
		{args: []string{"--cluster-nodes", remote, "--node-id", "n0", "--requirepass", "pw"}, env: env(), want: "refusing a raft port on 10.1.2.3:17000"},
		{args: []string{"--cluster-nodes", remote, "--node-id", "n0", "--requirepass", "pw"}, env: env(clusterSecretEnv, secret), wantSecret: secret,
			wantAuth: cluster.Auth{Password: "pw"}},
		{args: []string{"--cluster-nodes", remote, "--node-id", "n0", "--requirepass", "pw", "--protected-mode", "no"}, env: env(), wantAuth: cluster.Auth{Password: "pw"}},
		// Node-to-node AUTH.
		{args: []string{"--cluster-nodes", local, "--node-id", "n0", "--requirepass", "pw", "--masteruser", "ops", "--masterauth", "opspw"}, env: env(),
			wantAuth: cluster.Auth{User: "ops", Password: "opspw"}},
		{args: []string{"--cluster-nodes", local, "--node-id", "n0", "--requirepass", "pw"}, env: env(masterAuthEnv, "envpw"), wantAuth: cluster.Auth{Password: "envpw"}},
		{args: []string{"--cluster-nodes", local, "--node-id", "n0"}, env: env(passwordEnv, "pw"), wantAuth: cluster.Auth{Password: "pw"}},
		{args: []string{"--cluster-nodes", local, "--node-id", "n0", "--masteruser", "ops"}, env: env(), want: "--masteruser needs --masterauth"},
	} {
		o, err := parseServeFlags(tc.args, tc.env)
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if got := string(o.replica.security().Secret); got != tc.wantSecret {
			t.Errorf("%v: secret %q, want %q", tc.args, got, tc.wantSecret)
		}
		if got := o.replica.clientAuth(o.cfg.Users); got != tc.wantAuth {
			t.Errorf("%v: node auth %+v, want %+v", tc.args, got, tc.wantAuth)
		}
	}
}

// memrl cluster start makes DIR/cluster.secret once and passes it; a
// secret given another way is left alone; add passes it only if it exists.
func TestWithClusterSecret(t *testing.T) {
	dir := t.TempDir()
	none := func(string) (string, bool) { return "", false }
	if args, err := withClusterSecret(dir, []string{"--sync", "none"}, none, false); err != nil || len(args) != 2 {
		t.Fatalf("add without a secret file: %v %v", args, err)
	}
	args, err := withClusterSecret(dir, []string{"--sync", "none"}, none, true)
	path := filepath.Join(dir, clusterSecretFile)
	if err != nil || !slices.Equal(args, []string{"--cluster-secret-file", path, "--sync", "none"}) {
		t.Fatalf("start: %v %v", args, err)
	}
	first, _ := os.ReadFile(path)
	if args, err = withClusterSecret(dir, nil, none, true); err != nil || len(args) != 2 {
		t.Fatalf("restart: %v %v", args, err)
	}
	if again, _ := os.ReadFile(path); string(again) != string(first) {
		t.Fatal("the secret changed at a restart")
	}
	for _, given := range [][]string{{"--cluster-secret", "x"}, {"--cluster-secret-file=f"}, {"-cluster-tls-cert", "c"}} {
		if args, _ := withClusterSecret(dir, given, none, true); !slices.Equal(args, given) {
			t.Errorf("%v became %v", given, args)
		}
	}
	inEnv := func(k string) (string, bool) { return "s", k == clusterSecretEnv }
	if args, _ := withClusterSecret(dir, nil, inEnv, true); len(args) != 0 {
		t.Errorf("with $%s: %v", clusterSecretEnv, args)
	}
}
