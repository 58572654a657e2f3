package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/memrl/memrl/cluster"
)

// The mover: a collection moved with its data from shard `from` to shard
// `to` by memrl cluster reshard and rebalance (docs/CLUSTER.md
// "Resharding"; the node side is replica/move_*.go):
//
//  1. MEMRL.EXPORT on the source's leader: a consistent image of the
//     collection at raft index X, written by that leader to a file;
//  2. MEMRL.IMPORT BEGIN, CHUNK × (1 MiB each, read with
//     MEMRL.EXPORTREAD), PREPARE (each replica verifies and writes the
//     image in a goroutine), then, once the target leader's preparation
//     is done (MEMRL.IMPORTREADY), COMMIT X on the target: the collection
//     exists there as it was at X;
//  3. delta rounds while writes go on: MEMRL.DELTA reads the source's
//     commands for the collection after the last index copied, MEMRL.REPLAY
//     applies them on the target at their original times, until a round
//     finds little;
//  4. MEMRL.PAUSE on the source (its writes get TRYAGAIN from entry P on),
//     the final delta up to P, MEMRL.IMPORT SEAL P on the target,
//     MEMRL.FINISH on the source (drop and unpause in one entry: its
//     writes now get ASK to the target), MEMRL.IMPORT DONE on the target.
//
// Writes pause only in step 4. Every step is idempotent on the nodes, and
// a run that stops anywhere (a node killed, the mover killed) leaves
// records (MEMRL.MOVES) from which the next run's resolveMoves finishes
// the move (the target sealed: the source's copy is dropped) or rolls it
// back (the target's copy discarded, the source unpaused): each
// collection ends in exactly one shard.

// moveWait bounds each command of a move, retries on another leader
// included (reshard's and rebalance's --wait); a whole move is not bounded
// (a large collection takes long to copy).
var moveWait = 60 * time.Second

// mvReply is leaderReply bounded by moveWait.
func mvReply(ctx context.Context, nodes []cluster.Node, shard int, args ...string) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, moveWait)
	defer cancel()
	return leaderReply(ctx, nodes, shard, args...)
}

// prepareWait bounds waitPrepared: past it, COMMIT is sent anyway (it
// waits for the preparation on the target's apply goroutines, stalling
// the shard's writes, but is correct).
var prepareWait = 10 * time.Minute

// waitPrepared waits until the target leader's preparation of move id
// (MEMRL.IMPORT PREPARE) has ended, so that COMMIT, applied after it,
// finds it done and stalls the target shard's other writes for
// milliseconds only. A node without the preparation (-1: it became
// leader after a restart) or that does not know the command: COMMIT
// prepares there.
func waitPrepared(ctx context.Context, nodes []cluster.Node, shard int, id string) error {
	deadline := time.Now().Add(prepareWait)
	for time.Now().Before(deadline) {
		v, err := mvReply(ctx, nodes, shard, "MEMRL.IMPORTREADY", id)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if r, ok := v.(int64); err != nil || !ok || r != 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// mvDo is onLeader bounded by moveWait.
func mvDo(ctx context.Context, nodes []cluster.Node, shard int, args ...string) error {
	_, err := mvReply(ctx, nodes, shard, args...)
	return err
}

// moveChunk is the bytes of one MEMRL.IMPORT CHUNK: the nodes' bound
// (1 MiB), or less with MEMRL_MOVE_CHUNK (tests: several chunks of a
// small collection).
var moveChunk = func() int {
	if n, err := strconv.Atoi(os.Getenv("MEMRL_MOVE_CHUNK")); err == nil && n > 0 && n < 1<<20 {
		return n
	}
	return 1 << 20
}()

// moveDeltaBytes bounds one MEMRL.DELTA's and one MEMRL.REPLAY's bytes.
const moveDeltaBytes = 1 << 20

// moveCatchUp: a delta round that copies at most this many commands ends
// the rounds: the final one, writes paused, is about as short.
const moveCatchUp = 64

// moveMaxRounds bounds the delta rounds before the pause, so that a
// collection written faster than it can be copied still moves (with a
// longer pause).
const moveMaxRounds = 20

// errMoveRestart: the move must start again from a new export (the
// image's node lost it, or the source's log was compacted past X).
var errMoveRestart = errors.New("start the move again")

// moveStats are a move's figures.
type moveStats struct {
	Bytes    int64
	Replayed int
	Pause    time.Duration
	Took     time.Duration
}

// moveLog receives a line per moved collection.
var moveLog = os.Stderr

// moveStepOnce makes hook act once per process.
var moveStepOnce sync.Once

// hook marks a step of a move: "export" (the image is being written),
// "chunk" (the first chunk is imported), "prepare" (the target's
// replicas are preparing the image, COMMIT not yet sent), "delta" (a delta round is
// copied), "pause" (writes are paused), "commit" (the target is sealed,
// the source not yet dropped). With MEMRL_MOVE_PAUSE_AT=<step> in the
// environment (tests of real processes), the first move to reach that
// step prints "move-step <step>" on stdout and waits for a line on stdin,
// so that a test can kill a node at that very point.
func hook(step string) {
	if os.Getenv("MEMRL_MOVE_PAUSE_AT") != step {
		return
	}
	moveStepOnce.Do(func() {
		fmt.Printf("move-step %s\n", step)
		bufio.NewReader(os.Stdin).ReadString('\n')
	})
}

// newMoveID returns a fresh move id.
func newMoveID() string {
	var b [8]byte
	rand.Read(b[:])
	return "m" + hex.EncodeToString(b[:])
}

// moveCollection moves collection name from shard from to shard to.
// REQUIRES: the collection's slot is MIGRATING on from and IMPORTING on to,
// and resolveMoves has run (no records of an earlier move of it).
func moveCollection(ctx context.Context, nodes []cluster.Node, name string, from, to int) (moveStats, error) {
	for attempt := 1; ; attempt++ {
		st, err := moveOnce(ctx, nodes, name, from, to)
		if !errors.Is(err, errMoveRestart) || attempt == 5 || ctx.Err() != nil {
			return st, err
		}
		fmt.Fprintf(moveLog, "memrl cluster: moving %s again: %v\n", name, err)
	}
}

// moveOnce is one attempt; on errMoveRestart it has rolled back.
func moveOnce(ctx context.Context, nodes []cluster.Node, name string, from, to int) (st moveStats, err error) {
	start := time.Now()
	id := newMoveID()
	f, t := from, to
	rollback := func(cause error) error {
		return errors.Join(cause,
			mvDo(ctx, nodes, t, "MEMRL.IMPORT", "DISCARD", name, id),
			mvDo(ctx, nodes, f, "MEMRL.UNPAUSE", name, id))
	}
	// 1. The image.
	v, err := mvReply(ctx, nodes, f, "MEMRL.EXPORT", name, id)
	if err != nil {
		return st, err
	}
	x, ok := v.(int64)
	if !ok {
		return st, fmt.Errorf("MEMRL.EXPORT answered %v", v)
	}
	leaderMu.Lock()
	exporter := leaderCache[f]
	leaderMu.Unlock()
	defer nodeAuth.Do(context.Background(), exporter.Addr, 5*time.Second, "MEMRL.EXPORTDONE", id)
	hook("export")

	// 2. Import it.
	if err := mvDo(ctx, nodes, t, "MEMRL.IMPORT", "BEGIN", name, id); err != nil {
		return st, err
	}
	var off int64
	var seq int
	for {
		v, err := nodeAuth.Do(ctx, exporter.Addr, 30*time.Second, "MEMRL.EXPORTREAD", id, strconv.FormatInt(off, 10), strconv.Itoa(moveChunk))
		if err != nil && strings.HasPrefix(err.Error(), "TRYAGAIN") {
			select {
			case <-ctx.Done():
				return st, rollback(ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			return st, rollback(fmt.Errorf("%w: MEMRL.EXPORTREAD on %s: %v", errMoveRestart, exporter.ID, err))
		}
		a, _ := v.([]any)
		if len(a) != 3 {
			return st, rollback(fmt.Errorf("MEMRL.EXPORTREAD answered %v", v))
		}
		size, _ := a[1].(int64)
		chunk, _ := a[2].(string)
		if len(chunk) > 0 {
			if err := mvDo(ctx, nodes, t, "MEMRL.IMPORT", "CHUNK", id, strconv.Itoa(seq), chunk); err != nil {
				return st, rollback(err)
			}
			hook("chunk")
			seq++
			off += int64(len(chunk))
		}
		if off >= size {
			st.Bytes = size
			break
		}
	}
	if err := mvDo(ctx, nodes, t, "MEMRL.IMPORT", "PREPARE", id, strconv.Itoa(seq)); err != nil {
		return st, rollback(err)
	}
	hook("prepare")
	if err := waitPrepared(ctx, nodes, t, id); err != nil {
		return st, rollback(err)
	}
	if err := mvDo(ctx, nodes, t, "MEMRL.IMPORT", "COMMIT", id, strconv.Itoa(seq), strconv.FormatInt(x, 10)); err != nil {
		return st, rollback(err)
	}

	// 3. Delta rounds, writes going on.
	cursor := uint64(x)
	for round := 0; round < moveMaxRounds; round++ {
		n, err := copyDelta(ctx, nodes, name, id, f, t, &cursor, ^uint64(0)>>1)
		st.Replayed += n
		if err != nil {
			return st, rollback(err)
		}
		hook("delta")
		if n <= moveCatchUp {
			break
		}
	}

	// 4. Pause, the final delta, seal, finish.
	paused := time.Now()
	v, err = mvReply(ctx, nodes, f, "MEMRL.PAUSE", name, id)
	if err != nil {
		return st, rollback(err)
	}
	p, ok := v.(int64)
	if !ok {
		return st, rollback(fmt.Errorf("MEMRL.PAUSE answered %v", v))
	}
	hook("pause")
	for cursor < uint64(p) {
		n, err := copyDelta(ctx, nodes, name, id, f, t, &cursor, uint64(p))
		st.Replayed += n
		if err != nil {
			return st, rollback(err)
		}
	}
	if err := mvDo(ctx, nodes, t, "MEMRL.IMPORT", "SEAL", name, id, strconv.FormatInt(p, 10)); err != nil {
		return st, rollback(err)
	}
	hook("commit")
	// From the seal on, the move only goes forward (resolveMoves too).
	if err := finishMove(ctx, nodes, name, id, f, t); err != nil {
		return st, err
	}
	st.Pause = time.Since(paused)
	st.Took = time.Since(start)
	return st, nil
}

// finishMove drops the source's copy of a sealed move and forgets the
// target's record. A FINISH whose outcome was unknown and that is
// refused when sent again ("not paused") was applied.
func finishMove(ctx context.Context, nodes []cluster.Node, name, id string, from, to int) error {
	if err := mvDo(ctx, nodes, from, "MEMRL.FINISH", name, id); err != nil && !strings.Contains(err.Error(), "is not paused by move") {
		return err
	}
	return mvDo(ctx, nodes, to, "MEMRL.IMPORT", "DONE", name, id)
}

// copyDelta copies the source's commands for name after *cursor, up to
// upto, in one MEMRL.DELTA and MEMRL.REPLAY, and advances *cursor; it
// returns how many commands it copied.
func copyDelta(ctx context.Context, nodes []cluster.Node, name, id string, from, to int, cursor *uint64, upto uint64) (int, error) {
	v, err := mvReply(ctx, nodes, from, "MEMRL.DELTA", name, strconv.FormatUint(*cursor, 10),
		strconv.FormatUint(upto, 10), strconv.Itoa(moveDeltaBytes))
	if err != nil {
		if strings.Contains(err.Error(), "compacted") {
			return 0, fmt.Errorf("%w: %v", errMoveRestart, err)
		}
		return 0, err
	}
	a, _ := v.([]any)
	if len(a) != 2 {
		return 0, fmt.Errorf("MEMRL.DELTA answered %v", v)
	}
	last, _ := a[0].(int64)
	cmds, _ := a[1].([]any)
	if len(cmds) > 0 {
		args := []string{"MEMRL.REPLAY", name, strconv.Itoa(len(cmds))}
		for _, c := range cmds {
			e, _ := c.([]any)
			if len(e) != 4 {
				return 0, fmt.Errorf("MEMRL.DELTA answered an entry %v", c)
			}
			cmd, _ := e[3].([]any)
			args = append(args, fmt.Sprint(e[0]), fmt.Sprint(e[1]), fmt.Sprint(e[2]), strconv.Itoa(len(cmd)))
			for _, s := range cmd {
				str, _ := s.(string)
				args = append(args, str)
			}
		}
		if err := mvDo(ctx, nodes, to, args...); err != nil {
			return 0, err
		}
	}
	if uint64(last) > *cursor {
		*cursor = uint64(last)
	}
	return len(cmds), nil
}

// moveRecord is one line of MEMRL.MOVES.
type moveRecord struct {
	shard                 int
	kind, name, id, state string
}

// resolveMoves finishes or rolls back every collection move a stopped
// run left (records of MEMRL.MOVES on the shards' leaders): a move
// whose target is sealed is finished (the source's copy dropped), any
// other is rolled back (the target's copy discarded, then the source
// unpaused). Afterwards each collection is in exactly one shard and none
// is paused.
func resolveMoves(ctx context.Context, nodes []cluster.Node, shards int) (int, error) {
	var recs []moveRecord
	for k := range shards {
		v, err := mvReply(ctx, nodes, k, "MEMRL.MOVES")
		if err != nil {
			return 0, fmt.Errorf("MEMRL.MOVES on shard %d: %w", k, err)
		}
		lines, _ := v.([]any)
		for _, l := range lines {
			f, _ := l.([]any)
			if len(f) != 5 {
				continue
			}
			r := moveRecord{shard: k}
			r.kind, _ = f[0].(string)
			r.name, _ = f[1].(string)
			r.id, _ = f[2].(string)
			r.state, _ = f[3].(string)
			recs = append(recs, r)
		}
	}
	resolved := 0
	for _, p := range recs {
		if p.kind != "paused" {
			continue
		}
		var imp *moveRecord
		for i := range recs {
			if r := &recs[i]; r.kind == "import" && r.name == p.name && r.id == p.id {
				imp = r
			}
		}
		var err error
		if imp != nil && imp.state == "sealed" {
			err = finishMove(ctx, nodes, p.name, p.id, p.shard, imp.shard)
			imp.kind = "done"
		} else {
			if imp != nil {
				err = mvDo(ctx, nodes, imp.shard, "MEMRL.IMPORT", "DISCARD", p.name, p.id)
				imp.kind = "done"
			}
			if err == nil {
				err = mvDo(ctx, nodes, p.shard, "MEMRL.UNPAUSE", p.name, p.id)
			}
		}
		if err != nil {
			return resolved, fmt.Errorf("resolving the move of %s: %w", p.name, err)
		}
		resolved++
	}
	for _, r := range recs {
		if r.kind != "import" {
			continue
		}
		// No pause names it: a sealed import whose source has finished
		// (FINISH drops and unpauses at once) is done; any other import
		// is unfinished (the source still serves the collection).
		var err error
		if r.state == "sealed" && !elsewhere(ctx, nodes, shards, r.shard, r.name) {
			err = mvDo(ctx, nodes, r.shard, "MEMRL.IMPORT", "DONE", r.name, r.id)
		} else {
			err = mvDo(ctx, nodes, r.shard, "MEMRL.IMPORT", "DISCARD", r.name, r.id)
		}
		if err != nil {
			return resolved, fmt.Errorf("resolving the import of %s: %w", r.name, err)
		}
		resolved++
	}
	return resolved, nil
}

// elsewhere reports whether a shard other than self has collection name
// (asked with MEM.LIST on each leader; an unreachable shard counts as
// having it, so that nothing is wrongly declared done).
func elsewhere(ctx context.Context, nodes []cluster.Node, shards, self int, name string) bool {
	for k := range shards {
		if k == self {
			continue
		}
		v, err := mvReply(ctx, nodes, k, "MEM.LIST")
		if err != nil {
			return true
		}
		for _, n := range v.([]any) {
			if n == name {
				return true
			}
		}
	}
	return false
}

// slotCollections returns the collections shard has in slot.
func slotCollections(ctx context.Context, nodes []cluster.Node, shard, slot int) ([]string, error) {
	v, err := mvReply(ctx, nodes, shard, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(slot), "100000")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range v.([]any) {
		if s, ok := n.(string); ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// moveTotals sums the moves of a run.
type moveTotals struct {
	mu          sync.Mutex // guards the rest
	collections int
	bytes       int64
	replayed    int
	maxPause    time.Duration
	pauses      []time.Duration
}

func (m *moveTotals) add(name string, st moveStats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.collections++
	m.bytes += st.Bytes
	m.replayed += st.Replayed
	m.maxPause = max(m.maxPause, st.Pause)
	m.pauses = append(m.pauses, st.Pause)
	fmt.Fprintf(moveLog, "memrl cluster: moved %s: %d bytes, %d commands replayed, writes paused %v, took %v\n",
		name, st.Bytes, st.Replayed, st.Pause.Round(time.Microsecond), st.Took.Round(time.Millisecond))
}
