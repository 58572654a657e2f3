package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/memrl/memrl/cluster"
)

// TestServeClusterSecretBesideNodesFile: a node started by hand (as after
// a kill -9) with only --cluster-nodes and --node-id, in a cluster whose
// directory holds the cluster.secret memrl cluster start made, proves
// that secret on its raft port, as its peers do. Without it the node ran
// with an open raft port its peers' secret handshakes never reached and
// stayed a leaderless candidate (TestClusterReshardLeaderKill9's minute
// of CLUSTERDOWN). A secret or TLS given explicitly still wins, and a
// directory without cluster.secret gives none.
func TestServeClusterSecretBesideNodesFile(t *testing.T) {
	dir := t.TempDir()
	nodes := filepath.Join(dir, cluster.NodesFile)
	if err := cluster.WriteNodes(nodes, []cluster.Node{{ID: "n0", Addr: "127.0.0.1:7000"}}); err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(t.TempDir(), cluster.NodesFile)
	if err := cluster.WriteNodes(bare, []cluster.Node{{ID: "n0", Addr: "127.0.0.1:7000"}}); err != nil {
		t.Fatal(err)
	}
	const fileSecret = "from-cluster-start-0123456789abcdef"
	if err := os.WriteFile(filepath.Join(dir, clusterSecretFile), []byte(fileSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noEnv := func(string) (string, bool) { return "", false }
	envSecret := func(k string) (string, bool) {
		if k == clusterSecretEnv {
			return "from-the-environment-0123", true
		}
		return "", false
	}
	for _, tc := range []struct {
		name string
		args []string
		env  func(string) (string, bool)
		want string
	}{
		{"beside the nodes file", []string{"--cluster-nodes", nodes, "--node-id", "n0"}, noEnv, fileSecret},
		{"--cluster-secret wins", []string{"--cluster-nodes", nodes, "--node-id", "n0", "--cluster-secret", "given-on-the-line-0123"}, noEnv, "given-on-the-line-0123"},
		{"$MEMRL_CLUSTER_SECRET wins", []string{"--cluster-nodes", nodes, "--node-id", "n0"}, envSecret, "from-the-environment-0123"},
		{"no cluster.secret", []string{"--cluster-nodes", bare, "--node-id", "n0"}, noEnv, ""},
	} {
		o, err := parseServeFlags(tc.args, tc.env)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := string(o.replica.security().Secret); got != tc.want {
			t.Errorf("%s: secret %q, want %q", tc.name, got, tc.want)
		}
	}
}
