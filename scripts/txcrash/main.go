// Command txcrash measures whether a MULTI/EXEC transaction survives a
// kill -9 whole (issue 26, item 8). Each round it starts `memrl serve` on
// a fresh folder, adds -keys memories with keys k0…, then runs the
// documented "MEM.DEL coll KEY k + MEM.ADD … KEY k in MULTI/EXEC as one
// step" recipe for every key in one transaction and kills the server with
// SIGKILL while EXEC runs: once the log has grown by a random share of
// what the whole transaction writes (measured in a first, uncrashed run).
// It restarts the server on the folder and counts the keys present, and
// how many hold the transaction's new version. Lost keys mean a
// transaction kept in part.
//
//	go build -o /tmp/memrl ./cmd/memrl
//	go run ./scripts/txcrash -bin /tmp/memrl -rounds 10 -keys 40000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	bin := flag.String("bin", "memrl", "memrl binary")
	rounds := flag.Int("rounds", 10, "crashed rounds")
	keys := flag.Int("keys", 40000, "keys replaced by the transaction")
	base := flag.String("dir", os.TempDir(), "folder for the servers' data folders")
	seed := flag.Int64("seed", time.Now().UnixNano(), "random seed of the kill points")
	flag.Parse()
	if err := run(*bin, *base, *rounds, *keys, rand.New(rand.NewSource(*seed))); err != nil {
		fmt.Fprintln(os.Stderr, "txcrash:", err)
		os.Exit(1)
	}
}

func run(bin, base string, rounds, keys int, rng *rand.Rand) error {
	// Calibration: the log growth of a whole transaction.
	growth, err := round(bin, base, keys, -1)
	if err != nil {
		return err
	}
	fmt.Printf("calibration: the transaction grows the log by %d bytes\n", growth)
	total := 0
	for r := 1; r <= rounds; r++ {
		at := 1 + rng.Int63n(growth)
		lost, err := round(bin, base, keys, at)
		if err != nil {
			return err
		}
		total += int(lost)
	}
	fmt.Printf("total: %d keys lost in %d rounds\n", total, rounds)
	return nil
}

// round runs one round; killAt < 0 runs the transaction to its end and
// returns the log growth, else it kills the server once the log has grown
// by killAt bytes and returns the keys lost.
func round(bin, base string, keys int, killAt int64) (int64, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp(base, "txcrash-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	srv, rdb, err := start(bin, dir)
	if err != nil {
		return 0, err
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	if err := rdb.Do(ctx, "MEM.CREATE", "m", "DIM", 8, "METRIC", "L2").Err(); err != nil {
		return 0, err
	}
	for i := 0; i < keys; i += 1000 {
		args := []any{"MEM.MADD", "m"}
		for j := i; j < min(i+1000, keys); j++ {
			args = append(args, memory(j, 1)...)
		}
		if err := rdb.Do(ctx, args...).Err(); err != nil {
			return 0, err
		}
	}
	before := dirSize(filepath.Join(dir, "wal"))
	done := make(chan error, 1)
	go func() {
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for i := 0; i < keys; i++ {
				p.Do(ctx, "MEM.DEL", "m", "KEY", "k"+strconv.Itoa(i))
				p.Do(ctx, append([]any{"MEM.ADD", "m"}, memory(i, 2)...)...)
			}
			return nil
		})
		done <- err
	}()
	if killAt < 0 {
		if err := <-done; err != nil {
			return 0, err
		}
		return dirSize(filepath.Join(dir, "wal")) - before, nil
	}
	deadline := time.Now().Add(5 * time.Minute)
	answered := false
	for dirSize(filepath.Join(dir, "wal"))-before < killAt && time.Now().Before(deadline) {
		select {
		case err := <-done:
			answered = err == nil
		default:
		}
		if answered {
			break
		}
		time.Sleep(200 * time.Microsecond)
	}
	srv.Process.Signal(syscall.SIGKILL)
	srv.Wait()
	rdb.Close()

	srv2, rdb2, err := start(bin, dir)
	if err != nil {
		return 0, err
	}
	defer func() { srv2.Process.Kill(); srv2.Wait() }()
	n, err := rdb2.Do(ctx, "MEM.COUNT", "m").Int64()
	if err != nil {
		return 0, err
	}
	newer, err := rdb2.Do(ctx, "MEM.COUNT", "m", "FILTER", ".r == 2").Int64()
	if err != nil {
		return 0, err
	}
	lost := int64(keys) - n
	verdict := "ok"
	if lost != 0 || (newer != 0 && newer != int64(keys)) {
		verdict = "NOT ATOMIC"
	}
	fmt.Printf("killed after %d log bytes (EXEC answered: %v): %d keys present, %d lost, %d new, %d old: %s\n",
		killAt, answered, n, lost, newer, n-newer, verdict)
	rdb2.Close()
	return lost, nil
}

// memory is the arguments of key i's memory, version r.
func memory(i, r int) []any {
	a := []any{"VALUES", 8}
	for d := 0; d < 8; d++ {
		a = append(a, float32(i%97+d+r))
	}
	return append(a, "KEY", "k"+strconv.Itoa(i), "ATTRS", fmt.Sprintf(`{"r":%d}`, r),
		"PAYLOAD", fmt.Sprintf("memory %d version %d", i, r))
}

// start runs memrl serve on dir at a free loopback port and waits for it
// to answer PING.
func start(bin, dir string) (*exec.Cmd, *redis.Client, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve", "--dir", dir, "--addr", addr)
	cmd.Stderr = nil // the servers' logs are not needed
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: 5 * time.Minute, WriteTimeout: time.Minute})
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if rdb.Ping(context.Background()).Err() == nil {
			return cmd, rdb, nil
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, nil, errors.New("server did not answer PING")
		}
	}
}

// dirSize is the bytes of the files under dir.
func dirSize(dir string) int64 {
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
