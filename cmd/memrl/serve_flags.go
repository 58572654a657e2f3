package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/internal/cliflag"
	"github.com/memrl/memrl/server"
	"github.com/memrl/memrl/wal"
)

// serveOptions are memrl serve's flags, parsed and checked.
type serveOptions struct {
	dir       string
	addr      string
	unixSock  string
	unixPerm  os.FileMode
	sync      wal.SyncPolicy
	syncEvery time.Duration
	ckptEvery time.Duration
	mapFiles  bool

	maxOpenFiles   int // engine.Options.MaxOpenFiles
	maxCollections int // engine.Options.MaxCollections

	// acceptLogGap is engine.Options.AcceptLogGap (--accept-log-gap).
	acceptLogGap bool

	cfg server.Config // everything of the server's that a flag sets, but Logger
	obs *observeFlags // logging, SLOWLOG, metrics (serve_observe.go)
	// cluster holds --cluster-nodes and --node-id (serve_cluster.go).
	cluster *clusterFlags
	// replica holds --cluster-join (serve_replica.go).
	replica *replicaFlags
	// passwordOnCommandLine is set when --requirepass was used: ps shows it.
	passwordOnCommandLine bool
}

// passwordEnv names the environment variable that holds the default user's
// password, so that it stays out of ps.
const passwordEnv = "MEMRL_PASSWORD"

const serveUsage = `usage: memrl serve [flags]

Runs the server until SIGINT or SIGTERM: they finish the replies in flight,
checkpoint and close. The defaults are a data folder in the working
directory, loopback only, every acknowledged write fsynced.

Exposing the server: beyond loopback a password is required (protected
mode). Give it without showing it in ps: MEMRL_PASSWORD=... or
--requirepass-file FILE (--requirepass PASS works but ps shows it). Add
read-only or more users with --user / --users-file, and --tls-cert and
--tls-key to encrypt.

Cluster mode (docs/CLUSTER.md "Security"): a raft port beyond loopback needs
the cluster's secret ($MEMRL_CLUSTER_SECRET or --cluster-secret-file) or
--cluster-tls-cert/-key/-ca; nodes send each other --masterauth, else the
default user's password.

Sizes take a unit: 512kb, 64mb, 1gb (powers of 1024), or plain bytes.
Durations are Go's: 300ms, 30s, 5m. A negative duration, --maxmemory or
--max-reply-bytes means never/unlimited; 0 takes the default.

Flags:
`

// parseServeFlags parses memrl serve's command line; env looks up
// environment variables (os.LookupEnv, or a map in tests).
func parseServeFlags(args []string, env func(string) (string, bool)) (*serveOptions, error) {
	o := &serveOptions{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&o.dir, "dir", defaultDir, "data folder")
	fs.StringVar(&o.addr, "addr", defaultAddr, "TCP address to listen on; beyond loopback needs a password (or --protected-mode no)")
	fs.StringVar(&o.unixSock, "unixsocket", "", "also listen on this Unix socket (local clients skip TCP; a stale socket file is replaced)")
	unixPerm := fs.String("unixsocketperm", "700", "permissions of the --unixsocket file, octal")
	syncName := fs.String("sync", "always", "WAL sync policy: always (a reply means fsynced: survives a machine crash), interval (fsync every --sync-interval: survives a process kill, a machine crash loses up to one interval), none (written to the OS, never fsynced: survives a process kill, not a machine crash)")
	fs.DurationVar(&o.syncEvery, "sync-interval", 10*time.Millisecond, "fsync period for --sync interval")
	fs.DurationVar(&o.ckptEvery, "checkpoint-interval", 5*time.Minute, "longest time between checkpoints (<0 disables)")
	fs.BoolVar(&o.mapFiles, "map-files", false, "read vectors and indexes through mappings of their files instead of copies in memory in huge pages (memory the kernel can evict, a faster restart; slower searches)")

	fs.IntVar(&o.maxOpenFiles, "max-open-files", engine.DefaultMaxOpenFiles, "collection files kept open at once (least recently used are closed)")
	fs.IntVar(&o.maxCollections, "max-collections", engine.DefaultMaxCollections, "collections MEM.CREATE may make (<0: no cap)")
	fs.BoolVar(&o.acceptLogGap, "accept-log-gap", false, "open a data folder whose wal/ does not reach back to its checkpoint (emptied, truncated, restored from an older copy): the missing records are lost; without it such a folder is refused")

	pass := fs.String("requirepass", "", "password of the default user (shown by ps: prefer $"+passwordEnv+" or --requirepass-file)")
	passFile := fs.String("requirepass-file", "", "read the default user's password from this file (first line)")
	var users []string
	fs.Func("user", "another user, name:password:readonly|readwrite (repeatable; shown by ps: prefer --users-file)", func(s string) error {
		users = append(users, s)
		return nil
	})
	usersFile := fs.String("users-file", "", "users, one name:password:readonly|readwrite a line (# starts a comment)")
	protected := fs.String("protected-mode", "yes", "yes: refuse to listen beyond loopback without a password; no: allow it")

	tlsCert := fs.String("tls-cert", "", "TLS certificate chain (PEM); with --tls-key the server speaks only TLS")
	tlsKey := fs.String("tls-key", "", "TLS private key (PEM)")
	tlsCA := fs.String("tls-ca", "", "CA certificates (PEM) whose client certificates are required")

	fs.IntVar(&o.cfg.MaxClients, "maxclients", server.DefaultMaxClients, "most concurrent connections; more get -ERR max number of clients reached")
	fs.IntVar(&o.cfg.MaxClientsPerUser, "maxclients-per-user", 0, "most concurrent connections authenticated as one user (with passwords; the default user and each --user counted apart); more get -ERR max number of clients reached for user ... (0: three quarters of --maxclients; <0: no cap)")
	fs.DurationVar(&o.cfg.IdleTimeout, "timeout", 0, "close a connection idle this long (0: never)")
	fs.DurationVar(&o.cfg.FrameTimeout, "frame-timeout", server.DefaultFrameTimeout, "close a connection whose command is not complete this long after it began")
	fs.DurationVar(&o.cfg.AuthTimeout, "auth-timeout", server.DefaultAuthTimeout, "close a connection not authenticated this long after it connected (with a password only)")
	fs.DurationVar(&o.cfg.OutputTimeout, "output-timeout", server.DefaultOutputTimeout, "close a connection that does not read its replies for this long")
	maxMemory := sizeFlag(fs, "maxmemory", server.DefaultMaxMemory, "most bytes all clients together may make the server buffer (requests being read, payloads being sent); when given, also the most the data may hold in memory (INFO memory used_memory_dataset): past it, writes that add data get -OOM, reads and deletes still run")
	queryBuf := sizeFlag(fs, "client-query-buffer-limit", server.DefaultMaxCommandLen, "largest request one client may send (all its arguments)")
	maxBulk := sizeFlag(fs, "proto-max-bulk-len", server.DefaultMaxBulkLen, "largest single argument")
	fs.IntVar(&o.cfg.MaxQueuedCommands, "max-queued-commands", server.DefaultMaxQueuedCommands, "most commands one MULTI may queue; more make EXEC discard the transaction (<0: no cap)")
	maxReply := sizeFlag(fs, "max-reply-bytes", server.DefaultMaxReplyBytes, "largest reply of payloads (MEM.RETRIEVE ... WITHPAYLOAD)")
	authDelay := fs.Duration("auth-failure-delay", server.DefaultAuthFailureDelay, "hold back the answer to a connection's first failed AUTH this long, doubling with each further failure up to 2s (0: no delay)")
	authMax := fs.Int("max-auth-failures", server.DefaultMaxAuthFailures, "close a connection after this many failed AUTHs (0: never)")
	authRate := fs.Int("auth-failure-rate", server.DefaultAuthFailureRate, "most failed AUTHs the whole server answers a second; more wait their turn (0: unlimited)")
	busyMS := fs.Int("busy-timeout", int(server.DefaultBusyTimeout/time.Millisecond), "milliseconds one command (an EXEC as a whole) may run; a long read past it answers -TIMEOUT (<=0: unlimited)")

	o.obs = addObserveFlags(fs)
	o.cluster = addClusterFlags(fs)
	o.replica = addReplicaFlags(fs)

	fs.Usage = func() {
		fmt.Fprint(fs.Output(), serveUsage)
		fs.PrintDefaults()
	}
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return nil, err
	}

	if err := o.obs.check(); err != nil {
		return nil, cliflag.Usagef("%v", err)
	}
	var err error
	if o.sync, err = wal.ParseSyncPolicy(*syncName); err != nil {
		return nil, cliflag.Usagef("--sync: %v", err)
	}
	switch *protected {
	case "yes":
	case "no":
		o.cfg.DisableProtectedMode = true
	default:
		return nil, cliflag.Usagef("--protected-mode: want yes or no, not %q", *protected)
	}
	o.cfg.Addr = o.addr
	perm, err := strconv.ParseUint(*unixPerm, 8, 32)
	if err != nil || perm > 0o777 {
		return nil, cliflag.Usagef("--unixsocketperm: want octal permissions such as 700, not %q", *unixPerm)
	}
	o.unixPerm = os.FileMode(perm)
	addrSet := false
	fs.Visit(func(f *flag.Flag) { addrSet = addrSet || f.Name == "addr" })
	if err := o.cluster.check(o, addrSet); err != nil {
		return nil, err
	}
	if err := o.replica.check(o.cluster, o, env); err != nil {
		return nil, err
	}
	o.cfg.MaxMemory = *maxMemory
	// The data counts against --maxmemory only when it is given: the
	// default (1 GiB) was chosen for client buffers, and a database that
	// grew past it must not be refused writes by an upgrade.
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "maxmemory" && *maxMemory > 0 {
			o.cfg.MaxDataMemory = *maxMemory
		}
	})
	o.cfg.MaxReplyBytes = *maxReply
	// In server.Config 0 means the default and < 0 none; on the command
	// line 0 reads as "none", as --timeout's 0 means never.
	o.cfg.AuthFailureDelay, o.cfg.MaxAuthFailures, o.cfg.AuthFailureRate = *authDelay, *authMax, *authRate
	if *authDelay <= 0 {
		o.cfg.AuthFailureDelay = -1
	}
	if *authMax <= 0 {
		o.cfg.MaxAuthFailures = -1
	}
	if *authRate <= 0 {
		o.cfg.AuthFailureRate = -1
	}
	o.cfg.BusyTimeout = time.Duration(*busyMS) * time.Millisecond
	if *busyMS <= 0 {
		o.cfg.BusyTimeout = -1 // unlimited (0 would mean the default)
	}
	o.cfg.Limits = server.Limits{MaxCommandLen: int(*queryBuf), MaxBulkLen: int(*maxBulk)}

	// The default user's password: from one place only.
	envPass, inEnv := env(passwordEnv)
	switch {
	case *pass != "" && *passFile != "":
		return nil, cliflag.Usagef("give the password once: --requirepass or --requirepass-file, not both")
	case *pass != "":
		o.passwordOnCommandLine = true
	case *passFile != "":
		if *pass, err = readSecretFile(*passFile); err != nil {
			return nil, err
		}
	case inEnv:
		if envPass == "" {
			return nil, cliflag.Usagef("$%s is set but empty", passwordEnv)
		}
		*pass = envPass
	}
	if *pass != "" {
		o.cfg.Users = append(o.cfg.Users, server.User{Name: server.DefaultUser, Password: *pass})
	}
	for _, s := range users {
		u, err := server.ParseUser(s)
		if err != nil {
			return nil, cliflag.Usagef("--user: %v", err)
		}
		o.cfg.Users = append(o.cfg.Users, u)
	}
	if *usersFile != "" {
		lines, err := readUserLines(*usersFile)
		if err != nil {
			return nil, err
		}
		for i, s := range lines {
			u, err := server.ParseUser(s)
			if err != nil {
				return nil, cliflag.Usagef("--users-file %s, user %d: %v", *usersFile, i+1, err)
			}
			o.cfg.Users = append(o.cfg.Users, u)
		}
	}
	if err := server.ValidateUsers(o.cfg.Users); err != nil {
		return nil, cliflag.Usagef("%v", err) // e.g. a name given twice, before the database opens
	}

	if len(o.cfg.Users) == 0 && !o.cfg.DisableProtectedMode && !loopbackAddr(o.addr) {
		// Checked here too (the server checks the listener) so that the
		// refusal comes before the database is opened.
		return nil, protectedModeError(o.addr)
	}
	if *tlsCert != "" || *tlsKey != "" || *tlsCA != "" {
		if o.cfg.TLS, err = server.TLSConfig(*tlsCert, *tlsKey, *tlsCA); err != nil {
			return nil, cliflag.Usagef("--tls-cert/--tls-key/--tls-ca: %v", err)
		}
	}
	return o, nil
}

// readSecretFile returns the first line of a file, without its line end.
func readSecretFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("password file: %w", err)
	}
	s, _, _ := strings.Cut(string(b), "\n")
	s = strings.TrimSuffix(s, "\r")
	if s == "" {
		return "", fmt.Errorf("password file %s: the first line is empty", path)
	}
	return s, nil
}

// readUserLines returns the non-blank, non-comment lines of a users file.
func readUserLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out, sc.Err()
}

// sizeFlag defines a flag holding a byte count written with an optional
// unit (kb, mb, gb; powers of 1024), as Redis's configuration does.
func sizeFlag(fs *flag.FlagSet, name string, def int64, usage string) *int64 {
	v := def
	fs.Func(name, fmt.Sprintf("%s (default %s)", usage, formatSize(def)), func(s string) error {
		n, err := parseSize(s)
		if err != nil {
			return err
		}
		v = n
		return nil
	})
	return &v
}

// parseSize parses "1073741824", "1gb", "512mb", "64kb", "-1" (negative:
// unlimited where the flag allows it).
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n > (1<<62)/mult || n < -(1<<62)/mult {
		return 0, fmt.Errorf("not a size: %q (want bytes, or a number with kb, mb or gb)", s)
	}
	return n * mult, nil
}

func formatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "gb"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "mb"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "kb"
	}
	return strconv.FormatInt(n, 10)
}

// loopbackAddr reports whether host:port names only this machine: an
// address in 127.0.0.0/8 or ::1, or "localhost". An empty host or 0.0.0.0
// is every interface. A host name is left to the server's own check of the
// listener (reported as true here).
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true // net.Listen reports the bad address
	}
	if host == "" {
		return false
	}
	if net.ParseIP(host) == nil && host != "localhost" {
		return true // a name: the server checks the address it resolves to
	}
	return server.IsLoopbackHost(host)
}

// protectedModeError says why the server will not start and how to fix it.
func protectedModeError(addr string) error {
	return cliflag.Usagef("refusing to listen on %s without a password (protected mode): anyone who can reach "+
		"it could read, change and drop every memory. Set a password ($%s, --requirepass-file FILE or "+
		"--user), listen on loopback (--addr 127.0.0.1:6390), or, on a network you trust, --protected-mode no",
		addr, passwordEnv)
}
