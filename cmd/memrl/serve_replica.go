package main

import (
	"crypto/tls"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/memrl/memrl/cluster"
	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/internal/cliflag"
	"github.com/memrl/memrl/replica"
	"github.com/memrl/memrl/server"
	"github.com/memrl/memrl/wal"
)

// Replication in cluster mode (docs/CLUSTER.md "Replication"): the nodes
// of this node's shard in the nodes file (--cluster-nodes, read by
// clusterFlags in serve_cluster.go) form one raft group, and this process
// is one of its replicas (package replica). The engine then lives under
// --dir's fsm/ and is rebuilt from the raft snapshot and log at every
// start, so it runs without fsyncs of its own (wal.SyncNone; --sync does
// not apply): a write is acknowledged once a majority of the shard has
// fsynced it to its raft log (--dir's raft/raft.db).

// replicaFlags are the replication layer's own flags, and the node
// security ones (docs/CLUSTER.md "Security").
type replicaFlags struct {
	// join is --cluster-join: never bootstrap; wait to be added to the
	// shard's group with RAFT.ADD on its leader.
	join bool

	// secret, secretFile: --cluster-secret, --cluster-secret-file
	// ($MEMRL_CLUSTER_SECRET otherwise); the secret read by check.
	secret, secretFile string
	// secretOnCommandLine: --cluster-secret was used (ps shows it).
	secretOnCommandLine bool
	// tlsCert, tlsKey, tlsCA: --cluster-tls-*; tls is their config,
	// loaded by check.
	tlsCert, tlsKey, tlsCA string
	tls                    *replica.ClusterTLS
	// masterUser, masterAuth: --masteruser, --masterauth
	// ($MEMRL_MASTERAUTH otherwise): what this node sends other nodes'
	// client ports.
	masterUser, masterAuth string
	// allowOpenRaft: --protected-mode no.
	allowOpenRaft bool
}

// Environment variables of the node security flags, so that the secrets
// stay out of ps.
const (
	clusterSecretEnv = "MEMRL_CLUSTER_SECRET"
	masterAuthEnv    = "MEMRL_MASTERAUTH"
)

func addReplicaFlags(fs *flag.FlagSet) *replicaFlags {
	f := &replicaFlags{}
	fs.BoolVar(&f.join, "cluster-join", false, "cluster mode: a node added at run time: do not bootstrap the shard's raft group; wait for RAFT.ADD on its leader")
	fs.StringVar(&f.secret, "cluster-secret", "", "cluster mode: the secret every node proves before its raft connections are accepted, at least 16 bytes, the same on every node (shown by ps: prefer $"+clusterSecretEnv+" or --cluster-secret-file)")
	fs.StringVar(&f.secretFile, "cluster-secret-file", "", "cluster mode: read the cluster secret from this file (first line)")
	fs.StringVar(&f.tlsCert, "cluster-tls-cert", "", "cluster mode: this node's certificate (PEM) for mutual TLS between raft peers; needs --cluster-tls-key and --cluster-tls-ca")
	fs.StringVar(&f.tlsKey, "cluster-tls-key", "", "cluster mode: the private key (PEM) of --cluster-tls-cert")
	fs.StringVar(&f.tlsCA, "cluster-tls-ca", "", "cluster mode: the cluster's CA certificates (PEM): raft peers must present a certificate it signed")
	fs.StringVar(&f.masterUser, "masteruser", "", "cluster mode: the user this node authenticates as to other nodes (ROLE polls, MEM.LIST CLUSTER); default: the default user")
	fs.StringVar(&f.masterAuth, "masterauth", "", "cluster mode: the password this node sends other nodes (shown by ps: prefer $"+masterAuthEnv+"; default: the default user's password, --requirepass)")
	return f
}

// check validates the flags once the cluster flags are checked: it reads
// the cluster secret and loads the cluster TLS files. env looks up
// environment variables.
func (f *replicaFlags) check(c *clusterFlags, o *serveOptions, env func(string) (string, bool)) error {
	if f.join && !c.enabled() {
		return cliflag.Usagef("--cluster-join needs --cluster-nodes")
	}
	envSecret, inEnv := env(clusterSecretEnv)
	switch {
	case f.secret != "" && f.secretFile != "":
		return cliflag.Usagef("give the cluster secret once: --cluster-secret or --cluster-secret-file, not both")
	case f.secret != "":
		f.secretOnCommandLine = true
	case f.secretFile != "":
		s, err := readSecretFile(f.secretFile)
		if err != nil {
			return cliflag.Usagef("--cluster-secret-file: %v", err)
		}
		f.secret = s
	case inEnv:
		if envSecret == "" {
			return cliflag.Usagef("$%s is set but empty", clusterSecretEnv)
		}
		f.secret = envSecret
	case c.enabled() && f.tlsCert == "" && f.tlsKey == "" && f.tlsCA == "":
		// Given neither secret nor TLS, a node of a cluster that memrl
		// cluster start gave a secret (DIR/cluster.secret beside the
		// nodes file) uses it, as cluster start does: a node restarted
		// by hand without it would run with an open raft port that its
		// peers never reach (they prove the secret, it expects none),
		// and theirs refuse it, so it would stay a candidate with no
		// leader, answering every write CLUSTERDOWN, for as long as it
		// runs (issue 28: TestClusterReshardLeaderKill9's minute of
		// CLUSTERDOWN after its restarts).
		path := filepath.Join(filepath.Dir(c.nodesFile), clusterSecretFile)
		if _, err := os.Stat(path); err == nil {
			s, err := readSecretFile(path)
			if err != nil {
				return cliflag.Usagef("%s: %v", path, err)
			}
			f.secret, f.secretFile = s, path
		}
	}
	if f.secret != "" && len(f.secret) < replica.MinSecretLen {
		return cliflag.Usagef("the cluster secret must be at least %d bytes (openssl rand -hex 32 makes one)", replica.MinSecretLen)
	}
	if f.tlsCert != "" || f.tlsKey != "" || f.tlsCA != "" {
		t, err := replica.ClusterTLSConfig(f.tlsCert, f.tlsKey, f.tlsCA)
		if err != nil {
			return cliflag.Usagef("--cluster-tls-cert/--cluster-tls-key/--cluster-tls-ca: %v", err)
		}
		f.tls = t
	}
	if f.masterAuth == "" {
		if p, ok := env(masterAuthEnv); ok {
			if p == "" {
				return cliflag.Usagef("$%s is set but empty", masterAuthEnv)
			}
			f.masterAuth = p
		}
	}
	if f.masterUser != "" && f.masterAuth == "" {
		return cliflag.Usagef("--masteruser needs --masterauth (or $%s)", masterAuthEnv)
	}
	f.allowOpenRaft = o.cfg.DisableProtectedMode
	if c.enabled() && f.secret == "" && f.tls == nil && !f.allowOpenRaft && !loopbackAddr(cluster.RaftAddr(o.addr)) {
		// replica.NewTransport refuses it too; said here before the
		// database is opened.
		return cliflag.Usagef("refusing a raft port on %s without a cluster secret (protected mode): anyone who can reach it "+
			"could write to the shard. Give every node the same secret ($%s or --cluster-secret-file FILE), or "+
			"--cluster-tls-cert/--cluster-tls-key/--cluster-tls-ca, or, on a network you trust, --protected-mode no",
			cluster.RaftAddr(o.addr), clusterSecretEnv)
	}
	return nil
}

// nodeClientTLS is the TLS this node, or memrl cluster, dials the nodes'
// client ports with when they speak only TLS (srv, from --tls-cert and
// --tls-key): it trusts --tls-ca (else the system's roots), presents the
// node's own certificate (which --tls-ca requires of clients), as Redis's
// replication over TLS does, and checks the node's address against its
// certificate (an IP SAN for an IP). Nil without TLS.
func nodeClientTLS(srv *tls.Config) *tls.Config {
	if srv == nil {
		return nil
	}
	return &tls.Config{RootCAs: srv.ClientCAs, Certificates: srv.Certificates, MinVersion: tls.VersionTLS12}
}

// security is the raft transport's Security from the flags.
func (f *replicaFlags) security() replica.Security {
	s := replica.Security{TLS: f.tls, AllowUnauthenticated: f.allowOpenRaft}
	if f.secret != "" {
		s.Secret = []byte(f.secret)
	}
	return s
}

// clientAuth is what this node sends other nodes' client ports: AUTH
// [--masteruser] --masterauth, else the default user's password among
// users (every node of a cluster is started with the same --requirepass,
// as memrl cluster start does), else nothing.
func (f *replicaFlags) clientAuth(users []server.User) cluster.Auth {
	if f.masterAuth != "" {
		return cluster.Auth{User: f.masterUser, Password: f.masterAuth}
	}
	for _, u := range users {
		if u.Name == server.DefaultUser {
			return cluster.Auth{Password: u.Password}
		}
	}
	return cluster.Auth{}
}

// openReplica opens this process's replica: the voters it bootstraps with
// (unless --cluster-join) are the nodes of its shard, each at its client
// address's raft address (cluster.RaftAddr: port + 10000). It registers
// the memory commands, RAFT.* and the replicator on srv, and makes the
// node the cluster state's source for its shard's leader.
func openReplica(f *replicaFlags, c *clusterFlags, o *serveOptions, eopts engine.Options, srv *server.Server, logger *slog.Logger) (*replica.Node, error) {
	nodes, err := cluster.ReadNodes(c.nodesFile)
	if err != nil {
		return nil, err
	}
	self := c.node
	var peers []replica.Peer // empty: no bootstrap
	for _, n := range nodes {
		if n.Shard == self.Shard && !f.join {
			peers = append(peers, replica.Peer{ID: n.ID, RaftAddr: cluster.RaftAddr(n.Addr)})
		}
	}
	eopts.Sync = wal.SyncNone // durability is the raft log's
	if f.secretOnCommandLine {
		logger.Warn("--cluster-secret puts the secret where ps shows it; prefer $" + clusterSecretEnv + " or --cluster-secret-file")
	}
	if sec := f.security(); sec.Secret == nil && sec.TLS == nil && !loopbackAddr(cluster.RaftAddr(self.Addr)) {
		logger.Warn("the raft port is beyond loopback without a cluster secret or TLS (--protected-mode no): anyone who reaches it can write to the shard", "raft_addr", cluster.RaftAddr(self.Addr))
	}
	auth := f.clientAuth(o.cfg.Users)
	auth.TLS = nodeClientTLS(o.cfg.TLS)
	if auth.Password == "" && len(o.cfg.Users) > 0 {
		logger.Warn("users are set but no default user's password nor --masterauth: other nodes will answer this node's ROLE polls and MEM.LIST CLUSTER with NOAUTH")
	}
	// The shard's slot states (CLUSTER SETSLOT) are replicated: applied
	// by every replica from the log, kept in its engine folder so that
	// a raft snapshot ships them, read back when one is installed. They
	// are registered before the group opens, since committed entries
	// may apply before the router is set.
	// cur is the engine entries apply to (set before any applies).
	var cur atomic.Pointer[engine.DB]
	c.slots = cluster.NewSlotStates()
	c.exists = func(name string) bool {
		_, err := cur.Load().Collection(name)
		return err == nil
	}
	srv.SetSlotStates(c.slots, self.Shard, c.exists)
	opened := func(db *engine.DB) error {
		if err := c.slots.Load(db.Dir()); err != nil {
			return err
		}
		cur.Store(db)
		return nil
	}
	node, err := replica.Open(replica.Config{ID: self.ID, Dir: o.dir, RaftAddr: cluster.RaftAddr(self.Addr),
		Security: f.security(), ClientAuth: auth, Peers: peers, Engine: eopts, Logger: logger, EngineOpened: opened}, srv)
	if err != nil {
		return nil, err
	}
	c.leader = node.Leader
	c.auth = auth
	logger.Info("replica started", "node", self.ID, "shard", self.Shard, "raft_addr", cluster.RaftAddr(self.Addr), "voters", len(peers),
		"raft_secret", f.secret != "", "raft_tls", f.tls != nil, "node_auth", auth.Password != "")
	return node, nil
}

// Shutdown of a replica (docs/CLUSTER.md "Shutdown"). On SIGTERM or
// SIGINT a leader first hands its shard's leadership to another voter
// (replica.Node.TransferLeadership: the most up-to-date follower is told
// to start an election at once, so the shard does not wait an election
// timeout for a new leader), while the server still answers: writes get
// TRYAGAIN during the transfer and MOVED to the new leader after it. It
// then keeps answering for redirectLinger, so that clients busy on this
// node learn the new leader from a MOVED rather than from a closed
// connection, and only then stops the server and the node. Every step is
// bounded: the transfer by handOverTimeout, the server's shutdown by
// serve's 10 s, and the node's (replica.Node.Close, which closes every
// raft connection so that nothing waits on a paused peer) by its
// ShutdownTimeout, after which the process exits anyway.
const (
	handOverTimeout = 3 * time.Second
	redirectLinger  = 200 * time.Millisecond
)

// handOver transfers node's leadership before a shutdown, if it leads.
func handOver(node *replica.Node, logger *slog.Logger) {
	if !node.IsLeader() {
		return
	}
	start := time.Now()
	if err := node.TransferLeadership(handOverTimeout); err != nil {
		logger.Warn("leadership not handed over; shutting down anyway", "err", err)
		return
	}
	id, _ := node.Leader()
	logger.Info("leadership handed over", "to", id, "took", time.Since(start).Round(time.Millisecond))
	time.Sleep(redirectLinger)
}
