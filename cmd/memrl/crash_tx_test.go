package main

import (
	"context"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestKill9DuringExecAllOrNothing is issue 26, item 8, over the real
// process: `memrl serve` is killed with SIGKILL while EXEC runs the
// documented "MEM.DEL coll KEY k + MEM.ADD … KEY k" recipe for every key of
// a collection. After the restart every key must be present, all of one
// version: the transaction there whole (always, if EXEC was answered) or
// not at all. The kill comes once the log has grown by a random share of
// what the whole transaction writes (measured by a first, uncrashed run),
// so it lands inside EXEC; the payloads make the transaction pass the
// log's flush threshold several times, so a prefix of it is written and
// fsynced before EXEC ends, which a log without atomic groups keeps.
func TestKill9DuringExecAllOrNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a real server")
	}
	bin := buildMemrl(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	growth := execKillRound(t, bin, -1)
	for round := 0; round < 4; round++ {
		execKillRound(t, bin, 1+rng.Int63n(growth))
	}
}

// execKillRound runs one round on a fresh folder. killAt < 0 lets the
// transaction finish and returns how much it grew the log; otherwise the
// server is killed once the log has grown by killAt bytes.
func execKillRound(t *testing.T, bin string, killAt int64) int64 {
	const keys = 3000
	pad := strings.Repeat("p", 1000)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	logf, err := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	addr := freeAddr(t)
	cmd := startServe(t, bin, dir, addr, "always", logf)
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: time.Minute})
	defer rdb.Close()
	if err := rdb.Do(ctx, "MEM.CREATE", "m", "DIM", 2, "METRIC", "L2").Err(); err != nil {
		t.Fatal(err)
	}
	mem := func(i, version int) []any {
		return []any{"VALUES", 2, i, version, "KEY", "k" + strconv.Itoa(i),
			"ATTRS", `{"v":` + strconv.Itoa(version) + `}`, "PAYLOAD", pad}
	}
	for i := 0; i < keys; i += 500 {
		args := []any{"MEM.MADD", "m"}
		for j := i; j < i+500; j++ {
			args = append(args, mem(j, 1)...)
		}
		if err := rdb.Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	walDir := filepath.Join(dir, "wal")
	before := treeSize(walDir)
	done := make(chan error, 1)
	go func() {
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for i := 0; i < keys; i++ {
				p.Do(ctx, "MEM.DEL", "m", "KEY", "k"+strconv.Itoa(i))
				p.Do(ctx, append([]any{"MEM.ADD", "m"}, mem(i, 2)...)...)
			}
			return nil
		})
		done <- err
	}()
	if killAt < 0 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return treeSize(walDir) - before
	}
	answered := false
	for deadline := time.Now().Add(time.Minute); !answered && time.Now().Before(deadline) &&
		treeSize(walDir)-before < killAt; time.Sleep(200 * time.Microsecond) {
		select {
		case err := <-done:
			answered = err == nil
		default:
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	rdb.Close()

	cmd2 := startServe(t, bin, dir, addr, "always", logf)
	defer func() { cmd2.Process.Kill(); cmd2.Wait() }()
	rdb2 := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb2.Close()
	n, err := rdb2.Do(ctx, "MEM.COUNT", "m").Int64()
	if err != nil {
		t.Fatal(err)
	}
	newer, err := rdb2.Do(ctx, "MEM.COUNT", "m", "FILTER", ".v == 2").Int64()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed after %d log bytes (EXEC answered %v): %d keys present, %d of the new version", killAt, answered, n, newer)
	if n != keys || (newer != 0 && newer != keys) || (answered && newer != keys) {
		t.Fatalf("after kill -9 during EXEC: %d of %d keys present, %d of the new version (EXEC answered %v): "+
			"the transaction is not all or nothing", n, keys, newer, answered)
	}
	return 0
}

// treeSize is the bytes of the files under dir.
func treeSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
