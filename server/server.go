package server

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memrl/memrl/cluster"
)

// Version is the server version reported by HELLO and INFO.
const Version = "0.1.0"

// Defaults for Config fields left zero.
const (
	// DefaultAddr is loopback-only on purpose: the server has no
	// authentication, so exposing it must be an explicit choice.
	DefaultAddr       = "127.0.0.1:6379"
	DefaultMaxClients = 10000
	// DefaultMaxMemory is Config.MaxMemory's default: 1 GiB of client
	// buffers in all.
	DefaultMaxMemory = 1 << 30
	// DefaultMaxReplyBytes is Config.MaxReplyBytes's default.
	DefaultMaxReplyBytes = 512 << 20
	// DefaultBusyTimeout is Config.BusyTimeout's default, Redis's
	// busy-reply-threshold.
	DefaultBusyTimeout = 5 * time.Second
)

// Config configures a Server. The zero value is usable.
type Config struct {
	// Addr is the TCP address ListenAndServe listens on; default
	// DefaultAddr.
	Addr string
	// MaxClients bounds concurrent connections; a connection beyond it gets
	// "-ERR max number of clients reached" and is closed. Default
	// DefaultMaxClients.
	MaxClients int
	// TLS, if set, makes ListenAndServe speak TLS (see TLSConfig). A
	// listener given to Serve is used as it is.
	TLS *tls.Config
	// Limits bounds each request (see Limits); zero fields take defaults.
	Limits Limits
	// Users are the accounts clients authenticate as (see auth.go). Empty
	// means no authentication: every client has full access, and Serve
	// refuses a listener beyond loopback unless DisableProtectedMode.
	Users []User
	// PreAuthLimits bound each request of a client that has not yet
	// authenticated, when Users is not empty; zero fields take the fields
	// of the package variable PreAuthLimits.
	PreAuthLimits Limits
	// IdleTimeout closes a connection that sends no command for this
	// long; <= 0 means never (Redis's default, timeout 0).
	IdleTimeout time.Duration
	// FrameTimeout closes a connection whose command has begun to arrive
	// but is not complete after this long; 0 means DefaultFrameTimeout,
	// < 0 never.
	FrameTimeout time.Duration
	// AuthTimeout closes a connection that has not authenticated this long
	// after it was accepted, on a server with Users; 0 means
	// DefaultAuthTimeout, < 0 never.
	AuthTimeout time.Duration
	// AuthFailureDelay is how long the answer to a connection's first
	// failed AUTH (or HELLO ... AUTH) is held back; each further failure
	// on the connection doubles it, up to MaxAuthFailureDelay (auth.go).
	// 0 means DefaultAuthFailureDelay, < 0 no delay.
	AuthFailureDelay time.Duration
	// MaxAuthFailures closes a connection after this many failed AUTHs
	// (the last one is answered first); 0 means DefaultMaxAuthFailures,
	// < 0 never.
	MaxAuthFailures int
	// AuthFailureRate bounds the failed AUTHs the whole server answers
	// per second, over all connections (a burst of one second's worth is
	// answered at once); a failure beyond it waits its turn. 0 means
	// DefaultAuthFailureRate, < 0 unlimited.
	AuthFailureRate int
	// OutputTimeout closes a connection when a write of its replies makes
	// no progress for this long (the client does not read); 0 means
	// DefaultOutputTimeout, < 0 never.
	OutputTimeout time.Duration
	// MaxMemory bounds the bytes all clients together may make the server
	// buffer: requests being read and payloads of replies being written
	// (see budget.go). 0 means DefaultMaxMemory, < 0 unlimited.
	MaxMemory int64
	// MaxDataMemory bounds what the database's data holds in memory
	// (engine.DataMemory): at or past it, writes that add data are
	// refused with "-OOM" (see datamem.go). 0 or < 0 means unlimited.
	MaxDataMemory int64
	// MaxReplyBytes bounds one reply whose size a command knows before
	// writing it (MEM.RETRIEVE ... WITHPAYLOAD); a larger one is refused
	// with an error. 0 means DefaultMaxReplyBytes, < 0 unlimited.
	MaxReplyBytes int64
	// MaxQueuedCommands bounds the commands one MULTI may queue; one more
	// is refused and makes EXEC discard the transaction (tx.go). 0 means
	// DefaultMaxQueuedCommands, < 0 unlimited. Queued commands also count
	// against MaxMemory.
	MaxQueuedCommands int
	// BusyTimeout bounds how long one command (an EXEC as a whole) runs:
	// its context (Ctx.Context) ends this long after it started, and a
	// handler that honours it answers -TIMEOUT (busy.go). 0 means
	// DefaultBusyTimeout, < 0 unlimited.
	BusyTimeout time.Duration
	// MaxClientsPerUser bounds the connections authenticated as one user
	// at once, on a server with Users (userconns.go): the default user and
	// each other user are counted apart, so that one user (say a read-only
	// one) cannot take every connection MaxClients allows. An AUTH (or
	// HELLO ... AUTH) that would pass it gets "-ERR max number of clients
	// reached for user ..." and its connection is closed. 0 means three
	// quarters of MaxClients (the other users keep a quarter), < 0
	// unlimited. Without Users every client is the default user and
	// MaxClients alone bounds them.
	MaxClientsPerUser int
	// SearchSlots bounds the search steps (a MEM.RETRIEVE, a step of a
	// MEM.MRETRIEVE) running at once, those waiting taking turns between
	// users (admission.go). 0 means runtime.GOMAXPROCS(0), < 0 no bound.
	SearchSlots int
	// DisableProtectedMode lets a server without Users listen beyond
	// loopback (see ErrProtectedMode). The zero value is the safe one.
	DisableProtectedMode bool
	// Logger receives connection errors and handler panics; default
	// slog.Default().
	Logger *slog.Logger
}

// Server is a RESP2 TCP server that dispatches commands to registered
// handlers, one goroutine per connection. Create it with New, add commands
// with Register, then call Serve or ListenAndServe; stop it with Shutdown.
type Server struct {
	cfg   Config // defaults applied
	log   *slog.Logger
	start time.Time

	// cmds is replaced wholesale by Register (copy on write) so lookups on
	// the hot path take no lock. The map it points to is never modified.
	cmds atomic.Pointer[map[string]*command]

	data dataMemory // the data's memory, for MaxDataMemory (datamem.go)

	// closing mirrors shutdown below for lock-free checks between commands.
	closing atomic.Bool
	nextID  atomic.Int64
	connWG  sync.WaitGroup // one count per live connection goroutine

	statConns          atomic.Int64 // connections accepted, ever
	statCmds           atomic.Int64 // commands read, ever
	statRejected       atomic.Int64 // connections refused by MaxClients
	statHTTPProbes     atomic.Int64 // connections closed because they spoke HTTP
	statAuthFailures   atomic.Int64 // AUTH or HELLO AUTH with a wrong name or password
	authLogLast        atomic.Int64 // unix nanoseconds of the last failed-AUTH log line
	authLogTotal       atomic.Int64 // statAuthFailures when that line was written
	authRate           authRate     // spaces failed AUTHs server-wide (auth_throttle.go)
	statTimeouts       atomic.Int64 // connections closed by a read deadline
	statOutputTimeouts atomic.Int64 // connections closed because they did not read replies

	// txMu is held shared by every command while it runs, and exclusively
	// only by an EXEC with a write that names no collection (txlocks.go).
	txMu sync.RWMutex
	// colls are the collection locks taken under txMu (txlocks.go).
	colls collLocks
	// atomicTx makes EXEC crash-atomic (tx_atomic.go); set by
	// RegisterMemFunc before Serve.
	atomicTx txAtomic

	// repl is the Replicator set by SetReplicator, or nil (replicate.go).
	repl atomic.Pointer[Replicator]
	// router, if set, decides where each command is served (route.go).
	router atomic.Pointer[routerBox]
	// slots is the shard's slot-state table that MEMRL.SETSLOT applies
	// to (commands_setslot.go), or nil.
	slots atomic.Pointer[cluster.SlotStates]
	// guard, if set, checks replicated writes against the slot states
	// as they apply (setslot_apply.go).
	guard atomic.Pointer[slotGuard]

	// done is closed by the first Shutdown: it ends the waits of
	// connections holding back a failed AUTH's answer (auth_throttle.go).
	done chan struct{}

	auth   *authenticator // immutable after New
	budget Budget         // client memory (budget.go); its limit is set by New

	// gate admits search steps fairly between users (admission.go);
	// perUser counts each user's connections (userconns.go).
	gate    searchGate
	perUser userConns

	mu sync.Mutex // guards the fields below; also serialises Register
	// listeners being served; closed by Shutdown.
	listeners map[net.Listener]struct{}
	// firstAddr is the address of the first listener passed to Serve.
	firstAddr net.Addr
	// conns holds every live connection.
	// INVARIANT: a conn is in conns iff its goroutine holds a connWG count.
	conns map[*conn]struct{}
	// shutdown is set once by Shutdown; no connection is added after it.
	shutdown bool
	// info holds the INFO sections in the order added.
	info []infoSection

	obs observer // SLOWLOG, counters, extra CONFIG and metrics (stats.go)
}

// New returns a Server with the built-in commands (PING, ECHO, HELLO,
// COMMAND, QUIT, INFO, CLIENT, SELECT, CONFIG, AUTH, SLOWLOG) registered, or an
// error for an invalid Config (a bad user name, an empty password, a name
// given twice).
func New(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	cfg.Limits = cfg.Limits.withDefaults()
	cfg.PreAuthLimits = cfg.PreAuthLimits.or(PreAuthLimits)
	cfg.MaxMemory = defaultSize(cfg.MaxMemory, DefaultMaxMemory)
	cfg.MaxReplyBytes = defaultSize(cfg.MaxReplyBytes, DefaultMaxReplyBytes)
	cfg.MaxQueuedCommands = int(defaultSize(int64(cfg.MaxQueuedCommands), DefaultMaxQueuedCommands))
	cfg.FrameTimeout = defaultDuration(cfg.FrameTimeout, DefaultFrameTimeout)
	cfg.AuthTimeout = defaultDuration(cfg.AuthTimeout, DefaultAuthTimeout)
	cfg.OutputTimeout = defaultDuration(cfg.OutputTimeout, DefaultOutputTimeout)
	cfg.AuthFailureDelay = defaultDuration(cfg.AuthFailureDelay, DefaultAuthFailureDelay)
	cfg.MaxAuthFailures = int(defaultSize(int64(cfg.MaxAuthFailures), DefaultMaxAuthFailures))
	cfg.AuthFailureRate = int(defaultSize(int64(cfg.AuthFailureRate), DefaultAuthFailureRate))
	cfg.BusyTimeout = defaultDuration(cfg.BusyTimeout, DefaultBusyTimeout)
	auth, err := newAuthenticator(cfg.Users)
	if err != nil {
		return nil, err
	}
	s := &Server{
		auth:      auth,
		cfg:       cfg,
		log:       cfg.Logger,
		start:     time.Now(),
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*conn]struct{}),
		done:      make(chan struct{}),
	}
	if cfg.AuthFailureRate > 0 {
		s.authRate.interval = time.Second / time.Duration(cfg.AuthFailureRate)
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	empty := map[string]*command{}
	s.cmds.Store(&empty)
	s.budget.limit = cfg.MaxMemory
	s.gate.slots = searchSlots(cfg.SearchSlots)
	s.perUser.limit = perUserLimit(cfg.MaxClientsPerUser, cfg.MaxClients, auth.required())
	s.registerBuiltins()
	return s, nil
}

// ListenAndServe listens on cfg.Addr (with TLS if cfg.TLS is set) and
// serves until Shutdown, then returns ErrServerClosed.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	return s.Serve(ln)
}

// Addr returns the address of the first listener passed to Serve, or nil
// if Serve has not been called yet.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstAddr
}

// Serve accepts connections on ln until Shutdown is called (it then returns
// ErrServerClosed) or ln fails permanently. It returns ErrProtectedMode at
// once for a listener beyond loopback on a server without users (see
// protected.go). It may be called for several
// listeners concurrently. Serve closes ln when it returns.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.checkProtectedMode(ln); err != nil {
		ln.Close()
		return err
	}
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	if s.firstAddr == nil {
		s.firstAddr = ln.Addr()
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Transient failures (EMFILE, ECONNABORTED, ...): back off
			// rather than spin, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("server: accept failed; retrying", "err", err, "delay", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s.accept(nc)
	}
}

// accept registers nc and starts its goroutine, or refuses it.
func (s *Server) accept(nc net.Conn) {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if len(s.conns) >= s.cfg.MaxClients {
		s.mu.Unlock()
		s.statRejected.Add(1)
		go func() { // never let a slow client stall the accept loop
			nc.SetDeadline(time.Now().Add(time.Second)) // a TLS Write reads the handshake first
			nc.Write([]byte("-ERR max number of clients reached\r\n"))
			nc.Close()
		}()
		return
	}
	c := newConn(s, nc)
	s.conns[c] = struct{}{}
	s.connWG.Add(1) // under mu and after the shutdown check: Shutdown's Wait cannot race it
	s.mu.Unlock()
	s.statConns.Add(1)
	go c.serve()
}

// removeConn forgets c; called by c's goroutine as it exits.
func (s *Server) removeConn(c *conn) {
	s.perUser.leave(c) // userconns.go
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.connWG.Done()
}

// Shutdown stops the server gracefully: it closes the listeners, lets every
// command that is executing finish and its replies (and those of earlier
// pipelined commands) be flushed, and closes each connection at its next
// command boundary. Commands received but not yet started are not run.
// Idle connections are closed at once.
//
// If ctx ends first, Shutdown closes the remaining connections forcibly,
// cancels their contexts (see Ctx.Context) and returns ctx.Err(). Serve
// returns ErrServerClosed. Calling Shutdown more than once is harmless.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.shutdown {
		close(s.done)
	}
	s.shutdown = true
	s.closing.Store(true)
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.interrupt()
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() {
		s.connWG.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for c := range s.conns {
		c.forceClose()
	}
	s.mu.Unlock()
	return ctx.Err()
}

// clientCount returns the number of live connections.
func (s *Server) clientCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// defaultDuration maps 0 to def and a negative d to 0 (never).
func defaultDuration(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// defaultSize maps 0 to def and a negative n to 0 (unlimited).
func defaultSize(n, def int64) int64 {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}
