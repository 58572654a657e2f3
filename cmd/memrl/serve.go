package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
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
	syncName := fs.String("sync", "always", "WAL sync policy; every one survives kill -9: always (a reply means fsynced: survives power loss too), interval (fsync every --sync-interval), none (never fsync)")
	syncEvery := fs.Duration("sync-interval", 10*time.Millisecond, "fsync period for --sync interval")
	ckptEvery := fs.Duration("checkpoint-interval", 5*time.Minute, "longest time between checkpoints (<0 disables)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	policy, err := wal.ParseSyncPolicy(*syncName)
	if err != nil {
		return err
	}
	start := time.Now()
	db, err := engine.Open(*dir, engine.Options{Sync: policy, SyncInterval: *syncEvery, CheckpointInterval: *ckptEvery})
	if err != nil {
		return err
	}
	r := db.Recovery
	log.Printf("memrl: opened %s in %v: %d collections, checkpoint at log position %d, %d log records replayed",
		*dir, time.Since(start).Round(time.Millisecond), len(db.List()), r.CheckpointLSN, r.RecordsReplayed)

	srv := server.New(server.Config{Addr: *addr, Logger: slog.Default()})
	srv.RegisterMem(db)
	srv.AddInfoSection("simd", func() [][2]string {
		return [][2]string{{"simd_level", simd.Level()}, {"simd_supported", strings.Join(simd.Levels(), ",")}}
	})

	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	// Announce only once the listener is up, so scripts can wait for it.
	for srv.Addr() == nil {
		select {
		case err := <-errc:
			db.Close()
			return err
		case <-time.After(5 * time.Millisecond):
		}
	}
	log.Printf("memrl: serving on %s (sync %s, simd %s)", srv.Addr(), policy, simd.Level())

	var serveErr error
	select {
	case s := <-sigs:
		log.Printf("memrl: %v: finishing replies, checkpointing, closing", s)
	case serveErr = <-errc:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Printf("memrl: shutdown: %v", err)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	if serveErr != nil && !errors.Is(serveErr, server.ErrServerClosed) {
		return serveErr
	}
	log.Printf("memrl: closed cleanly")
	return nil
}
