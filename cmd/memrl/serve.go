package main

import (
	"context"
	"errors"
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
)

// Defaults of memrl serve: a data folder in the working directory and a
// loopback address, because the server has no authentication.
const (
	defaultDir  = "./memrl-data"
	defaultAddr = "127.0.0.1:6390"
)

func serve(args []string) error {
	o, err := parseServeFlags(args, os.LookupEnv)
	if err != nil {
		return err
	}
	if o.passwordOnCommandLine {
		log.Printf("memrl: warning: --requirepass puts the password where ps shows it; prefer $%s or --requirepass-file", passwordEnv)
	}
	start := time.Now()
	db, err := engine.Open(o.dir, engine.Options{Sync: o.sync, SyncInterval: o.syncEvery, CheckpointInterval: o.ckptEvery,
		MaxOpenFiles: o.maxOpenFiles, MaxCollections: o.maxCollections})
	if err != nil {
		return err
	}
	r := db.Recovery
	log.Printf("memrl: opened %s in %v: %d collections, checkpoint at log position %d, %d log records replayed",
		o.dir, time.Since(start).Round(time.Millisecond), len(db.List()), r.CheckpointLSN, r.RecordsReplayed)

	cfg := o.cfg
	cfg.Logger = slog.Default()
	srv, err := server.New(cfg)
	if err != nil {
		db.Close()
		return err
	}
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
			if errors.Is(err, server.ErrProtectedMode) {
				return protectedModeError(o.addr)
			}
			return err
		case <-time.After(5 * time.Millisecond):
		}
	}
	log.Printf("memrl: serving on %s (sync %s, simd %s, tls %v, users %d)", srv.Addr(), o.sync, simd.Level(), o.cfg.TLS != nil, len(o.cfg.Users))

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
