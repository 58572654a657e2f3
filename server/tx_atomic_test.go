package server

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
	"github.com/redis/go-redis/v9"
)

// TestExecCrashAtomic is issue 26, item 8, through the server: the
// documented recipe "MEM.DEL coll KEY k + MEM.ADD … KEY k in MULTI/EXEC as
// one step", for every key of a collection, with the power cut at a
// random file operation during EXEC. After recovery every key must be
// present, and the transaction there whole or not at all (whole if EXEC
// was answered). Before EXEC was crash-atomic the log kept a durable
// prefix of the transaction: deletes without their adds, keys lost.
func TestExecCrashAtomic(t *testing.T) {
	// Payloads large enough that the transaction's records pass the log's
	// flush threshold (1 MiB) mid-way: the log writes and fsyncs a prefix
	// of them before EXEC ends, as it does in any large transaction.
	const keys = 100
	pad := strings.Repeat("x", 16<<10)
	base := time.Now().UnixNano()
	for round := 0; round < 12; round++ {
		seed := base + int64(round)
		rng := rand.New(rand.NewSource(seed))
		fs := vfs.NewMemFS()
		opts := engine.Options{FS: fs, Sync: wal.SyncAlways, CheckpointInterval: -1, CheckpointBytes: -1,
			CompactShare: -1, Logf: func(string, ...any) {}}
		db, err := engine.Open("/db", opts)
		if err != nil {
			t.Fatal(err)
		}
		var acked bool
		mode := vfs.CrashMode(rng.Intn(3))
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			ts := startServer(t, Config{}, func(s *Server) { s.RegisterMem(db) })
			rdb := ts.client(t)
			mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2, "METRIC", "L2")
			replace := func(round int) error {
				_, err := rdb.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
					for i := 0; i < keys; i++ {
						k := fmt.Sprint("k", i)
						p.Do(context.Background(), "MEM.DEL", "m", "KEY", k)
						p.Do(context.Background(), "MEM.ADD", "m", "VALUES", 2, i, round, "KEY", k,
							"PAYLOAD", fmt.Sprint("round ", round, pad))
					}
					return nil
				})
				return err
			}
			if err := replace(1); err != nil {
				t.Fatal(err)
			}
			fs.PowerOffAt(1 + rng.Int63n(keys*3))
			acked = replace(2) == nil
		})
		crashed := fs.Crash(mode, rng)
		db.Close()
		what := fmt.Sprintf("seed %d, %v, EXEC answered %v", seed, mode, acked)
		db2, err := engine.Open("/db", engine.Options{FS: crashed, Sync: wal.SyncAlways, CheckpointInterval: -1,
			CheckpointBytes: -1, CompactShare: -1, Logf: func(string, ...any) {}})
		if err != nil {
			t.Fatalf("%s: recovery: %v", what, err)
		}
		c, err := db2.Collection("m")
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		rounds := map[string]int{}
		lost := 0
		for i := 0; i < keys; i++ {
			m, err := c.GetRef(engine.ByKey(fmt.Sprint("k", i)))
			if errors.Is(err, engine.ErrNoMemory) {
				lost++
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			rounds[strings.TrimRight(string(m.Payload), "x")]++
		}
		db2.Close()
		if lost > 0 || len(rounds) != 1 || (acked && rounds["round 2"] != keys) {
			t.Fatalf("%s: %d keys lost, payloads %v: the transaction is not all or nothing", what, lost, rounds)
		}
	}
}
