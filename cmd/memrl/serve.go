package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/server"
	"github.com/memrl/memrl/simd"
	"github.com/memrl/memrl/wal"
)

// Defaults of memrl serve: a data folder in the working directory and a
// loopback address, because the server has no authentication.
const (
	defaultDir  = "./memrl-data"
	defaultAddr = "127.0.0.1:6390"
)

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	dir := fs.String("dir", defaultDir, "data folder")
	addr := fs.String("addr", defaultAddr, "TCP address to listen on")
	syncName := fs.String("sync", "always", "WAL sync policy: always (a reply means fsynced), interval, none")
	syncEvery := fs.Duration("sync-interval", 10*time.Millisecond, "fsync period for --sync interval")
	ckptEvery := fs.Duration("checkpoint-interval", 5*time.Minute, "longest time between checkpoints (<0 disables)")
	obs := addObserveFlags(fs) // serve_observe.go
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := obs.check(); err != nil {
		return err
	}
	logger, _ := obs.logger(os.Stderr)
	slog.SetDefault(logger) // the std log package writes through it too
	policy, err := wal.ParseSyncPolicy(*syncName)
	if err != nil {
		return err
	}
	start := time.Now()
	db, err := engine.Open(*dir, engine.Options{Sync: policy, SyncInterval: *syncEvery, CheckpointInterval: *ckptEvery,
		Logf: engineLogf(logger)})
	if err != nil {
		return err
	}
	r := db.Recovery
	logger.Info("opened the database", "dir", *dir, "took", time.Since(start).Round(time.Millisecond),
		"collections", len(db.List()), "checkpoint_lsn", r.CheckpointLSN, "records_replayed", r.RecordsReplayed)

	srv := server.New(server.Config{Addr: *addr, Logger: logger})
	srv.RegisterMem(db)
	srv.AddInfoSection("simd", func() [][2]string {
		return [][2]string{{"simd_level", simd.Level()}, {"simd_supported", strings.Join(simd.Levels(), ",")}}
	})
	stopObs, err := obs.start(srv, logger)
	if err != nil {
		db.Close()
		return err
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	// Announce only once the listener is up, so scripts can wait for it.
	for srv.Addr() == nil {
		select {
		case err := <-errc:
			stopObs(context.Background())
			db.Close()
			return err
		case <-time.After(5 * time.Millisecond):
		}
	}
	logger.Info("serving", "addr", srv.Addr().String(), "sync", policy.String(), "simd", simd.Level())

	var serveErr error
	select {
	case s := <-sigs:
		logger.Info("finishing replies, checkpointing, closing", "signal", s.String())
	case serveErr = <-errc:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		logger.Warn("shutdown", "err", err)
	}
	stopObs(ctx)
	if err := db.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	if serveErr != nil && !errors.Is(serveErr, server.ErrServerClosed) {
		return serveErr
	}
	logger.Info("closed cleanly")
	return nil
}
