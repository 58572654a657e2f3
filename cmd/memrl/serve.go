package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/replica"
	"github.com/memrl/memrl/server"
	"github.com/memrl/memrl/simd"
)

// Defaults of memrl serve: a data folder in the working directory and a
// loopback address, because no password is set by default.
const (
	defaultDir  = "./memrl-data"
	defaultAddr = "127.0.0.1:6390"
)

func serve(args []string) error {
	o, err := parseServeFlags(args, os.LookupEnv)
	if err != nil {
		return err
	}
	logger, _ := o.obs.logger(os.Stderr) // checked by parseServeFlags
	slog.SetDefault(logger)              // the std log package writes through it too
	if o.passwordOnCommandLine {
		logger.Warn("--requirepass puts the password where ps shows it; prefer $" + passwordEnv + " or --requirepass-file")
	}
	if nofile, err := openFileLimit(); err == nil {
		maxOpen := o.maxOpenFiles
		if maxOpen <= 0 {
			maxOpen = engine.DefaultMaxOpenFiles
		}
		if o.cfg.MaxClients <= 0 {
			o.cfg.MaxClients = server.DefaultMaxClients // what server.New would take
		}
		fit, warn, err := fitMaxClients(o.cfg.MaxClients, maxOpen, nofile)
		if err != nil {
			return err
		}
		if warn != "" {
			logger.Warn(warn)
		}
		o.cfg.MaxClients = fit
	}
	cfg := o.cfg
	cfg.Logger = logger
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	start := time.Now()
	eopts := engine.Options{Sync: o.sync, SyncInterval: o.syncEvery, CheckpointInterval: o.ckptEvery,
		MaxOpenFiles: o.maxOpenFiles, MaxCollections: o.maxCollections, MapFiles: o.mapFiles, Logf: engineLogf(logger)}
	eopts.AcceptLogGap = o.acceptLogGap
	var db *engine.DB
	var node *replica.Node
	var collections func() []string
	if o.cluster.enabled() { // cluster mode: every shard is a raft group (serve_replica.go)
		if node, err = openReplica(o.replica, o.cluster, o, eopts, srv, logger); err != nil {
			return err
		}
		// The replica's engine is replaced when it installs a snapshot.
		collections = func() []string { return node.DB().List() }
	} else {
		if db, err = engine.Open(o.dir, eopts); err != nil {
			return err
		}
		r := db.Recovery
		logger.Info("opened the database", "dir", o.dir, "took", time.Since(start).Round(time.Millisecond),
			"collections", len(db.List()), "checkpoint_lsn", r.CheckpointLSN, "records_replayed", r.RecordsReplayed)
		srv.RegisterMem(db)
		collections = db.List
	}
	// closeDB closes the engine, or the replica and its engine.
	closeDB := func() error {
		if node != nil {
			return node.Close()
		}
		return db.Close()
	}
	stopCluster, err := o.cluster.start(srv, collections, logger) // serve_cluster.go; standalone: nothing
	if err != nil {
		closeDB()
		return err
	}
	defer stopCluster()
	srv.AddInfoSection("simd", func() [][2]string {
		return [][2]string{{"simd_level", simd.Level()}, {"simd_supported", strings.Join(simd.Levels(), ",")}}
	})
	govCtx, stopGov := context.WithCancel(context.Background())
	defer stopGov()
	go governHeap(govCtx, srv.ClientMemory(), srv.ClientMemory().Limit(), logger) // heaplimit.go
	stopObs, err := o.obs.start(srv, logger)
	if err != nil {
		closeDB()
		return err
	}

	errc := make(chan error, 2) // the TCP listener's Serve, and the Unix socket's
	go func() { errc <- srv.ListenAndServe() }()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	// Announce only once the listener is up, so scripts can wait for it.
	for srv.Addr() == nil {
		select {
		case err := <-errc:
			stopObs(context.Background())
			closeDB()
			if errors.Is(err, server.ErrProtectedMode) {
				return protectedModeError(o.addr)
			}
			return err
		case <-time.After(5 * time.Millisecond):
		}
	}
	if o.unixSock != "" {
		ln, err := listenUnix(o.unixSock, o.unixPerm)
		if err != nil {
			srv.Shutdown(context.Background())
			stopObs(context.Background())
			closeDB()
			return err
		}
		go func() { errc <- srv.Serve(ln) }()
	}
	logger.Info("serving", "addr", srv.Addr().String(), "unixsocket", o.unixSock, "sync", o.sync.String(), "simd", simd.Level(),
		"tls", o.cfg.TLS != nil, "users", len(o.cfg.Users))

	var serveErr error
	select {
	case s := <-sigs:
		logger.Info("finishing replies, checkpointing, closing", "signal", s.String())
		if node != nil {
			handOver(node, logger) // serve_replica.go: a leader hands its shard over first
		}
	case serveErr = <-errc:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		logger.Warn("shutdown", "err", err)
	}
	stopObs(ctx)
	if err := closeDB(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	if serveErr != nil && !errors.Is(serveErr, server.ErrServerClosed) {
		return serveErr
	}
	logger.Info("closed cleanly")
	return nil
}
