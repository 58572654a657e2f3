package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/memrl/memrl/cluster"
	"github.com/memrl/memrl/internal/cliflag"
)

// Node security for memrl cluster start|add|remove (docs/CLUSTER.md
// "Security"): the nodes' raft ports need a cluster secret, and the tool's
// own questions to the nodes (probes, RAFT.ADD, CLUSTER RELOAD) need the
// password the nodes were given.

// clusterSecretFile is the secret memrl cluster start makes for a cluster
// given none (DIR/cluster.secret, mode 0600) and passes to every node with
// --cluster-secret-file.
const clusterSecretFile = "cluster.secret"

// nodeAuth is what this memrl cluster process sends to the nodes' client
// ports, set once from its flags before any question (toolAuth). A
// package variable: the tool is one command of one process.
var nodeAuth cluster.Auth

// toolAuth is the AUTH the nodes started with serveArgs expect, as each
// node would send it to the others (replicaFlags.clientAuth):
// --masterauth, $MEMRL_MASTERAUTH, or the default user's password
// (--requirepass, --requirepass-file, $MEMRL_PASSWORD); over TLS when
// they speak only TLS (nodeClientTLS).
func toolAuth(serveArgs []string, env func(string) (string, bool)) (cluster.Auth, error) {
	o, err := parseServeFlags(serveArgs, env)
	if err != nil {
		return cluster.Auth{}, fmt.Errorf("the serve flags after --: %w", err)
	}
	a := o.replica.clientAuth(o.cfg.Users)
	a.TLS = nodeClientTLS(o.cfg.TLS)
	return a, nil
}

// withClusterSecret returns serveArgs with --cluster-secret-file
// DIR/cluster.secret added, unless they (or $MEMRL_CLUSTER_SECRET) already
// give the nodes a secret or cluster TLS. create makes the file (32 random
// bytes, hex) when it is missing (memrl cluster start); without create a
// missing file adds nothing (memrl cluster add to a cluster started
// without one).
func withClusterSecret(dir string, serveArgs []string, env func(string) (string, bool), create bool) ([]string, error) {
	if _, ok := env(clusterSecretEnv); ok {
		return serveArgs, nil
	}
	for _, a := range serveArgs {
		for _, f := range []string{"cluster-secret", "cluster-secret-file", "cluster-tls-cert"} {
			if a == "-"+f || a == "--"+f || strings.HasPrefix(a, "-"+f+"=") || strings.HasPrefix(a, "--"+f+"=") {
				return serveArgs, nil
			}
		}
	}
	path := filepath.Join(dir, clusterSecretFile)
	_, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && create:
		b := make([]byte, 32)
		rand.Read(b)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("cluster secret: %w", err)
		}
		_, werr := f.WriteString(hex.EncodeToString(b) + "\n")
		if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
			os.Remove(path)
			return nil, fmt.Errorf("cluster secret: %w", err)
		}
	case errors.Is(err, fs.ErrNotExist):
		return serveArgs, nil
	case err != nil:
		return nil, fmt.Errorf("cluster secret: %w", err)
	}
	return append([]string{"--cluster-secret-file", path}, serveArgs...), nil
}

// setNodeAuth splits args at "--" into the action's flags and the serve
// flags after it, and sets nodeAuth from the serve flags (the password
// the nodes were started with, or $MEMRL_PASSWORD).
func setNodeAuth(args []string) (own, serveArgs []string, err error) {
	own = args
	for i, a := range args {
		if a == "--" {
			own, serveArgs = args[:i], args[i+1:]
			break
		}
	}
	if nodeAuth, err = toolAuth(serveArgs, os.LookupEnv); err != nil {
		return nil, nil, cliflag.Usagef("%v", err)
	}
	return own, serveArgs, nil
}
