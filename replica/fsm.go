package replica

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/server"
)

// fsm is the raft state machine of a Node: the engine, driven through the
// server's handlers (server.Server.Apply). hashicorp/raft calls Apply,
// Snapshot and Restore from one goroutine, never concurrently with each
// other; Persist of an earlier snapshot runs concurrently with Apply.
type fsm struct{ n *Node }

// Apply applies one committed entry (as ApplyBatch does a batch of one).
func (f fsm) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// Snapshot takes a full engine checkpoint and pins the files it refers
// to (snapshot.go). No Apply runs meanwhile, so the checkpoint holds every
// applied command and the log past it holds none.
func (f fsm) Snapshot() (raft.FSMSnapshot, error) {
	db := f.n.DB()
	if err := db.CheckpointFull(); err != nil {
		return nil, fmt.Errorf("replica: checkpoint for a snapshot: %w", err)
	}
	return pinFiles(db.Dir())
}

// Restore replaces the engine with the snapshot in rc: the stream is read
// into a fresh folder and verified whole, an engine is opened there, and
// only then swapped in for the old one, which is closed and removed. A
// refused or unreadable snapshot changes nothing.
func (f fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	n := f.n
	start := time.Now()
	dir := n.nextEngineDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := readSnapshot(rc, dir); err != nil {
		os.RemoveAll(dir)
		n.log.Error("replica: snapshot refused", "err", err)
		return err
	}
	// The snapshot is a full checkpoint without its log, which it covers
	// whole: an empty log is its start, not a gap (engine/loggap.go).
	o := n.engineOptions()
	o.RestoredSnapshot = true
	db, err := engine.Open(dir, o)
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("replica: open the restored engine: %w", err)
	}
	if h := n.cfg.EngineOpened; h != nil {
		if err := h(db); err != nil {
			db.Close()
			os.RemoveAll(dir)
			n.log.Error("replica: snapshot refused", "err", err)
			return err
		}
	}
	old := n.db.Swap(db)
	if old != nil {
		// Preparations into the old engine end first (Commit or Abort
		// before its Close); COMMIT prepares again from the snapshot's
		// staged image.
		n.preps.stopAll()
		if err := old.Close(); err != nil {
			n.log.Warn("replica: closing the replaced engine", "err", err)
		}
		os.RemoveAll(old.Dir())
	}
	n.log.Info("replica: snapshot installed", "collections", len(db.List()), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// nextEngineDir returns a new engine folder under DIR/fsm.
func (n *Node) nextEngineDir() string {
	return filepath.Join(n.cfg.Dir, "fsm", "gen-"+strconv.FormatInt(n.gen.Add(1), 10))
}

// engineOptions are the options of every engine the node opens: the
// caller's, with the clock the state machine sets, no sweeper or pruner
// of the engine's own (the leader proposes their deletes: maintain.go),
// and exact searches in writes (a deduplicated add must choose the same
// memory on every replica, whatever each one's index).
func (n *Node) engineOptions() engine.Options {
	o := n.cfg.Engine
	o.Now = n.now
	o.ExactWrites = true
	o.SweepInterval = -1
	o.PruneInterval = -1
	return o
}

// now is the engine's clock: the time carried by the entry being applied,
// or the wall clock between entries (reads only compare it with expiries).
func (n *Node) now() time.Time {
	if t := n.clock.Load(); t != 0 {
		return time.Unix(0, t)
	}
	return time.Now()
}

var _ server.Replicator = (*Node)(nil)

// ApplyBatch applies a batch of committed entries (raft.BatchingFSM), in
// order, with one wait for the engine's log to take them all
// (server.Applier) instead of one each. An entry's response is the RESP
// reply its command produced ([]byte) for a single-command Entry, or one
// reply per command ([][]byte) for a Batch, which the leader's Replicate
// hands to the clients. A command's error reply is its own: the commands
// after it in the batch still run, as pipelined commands of a client do
// on one node. Every replica computes the same replies and the same state:
// the entry carries the leader's clock, and validation errors are
// deterministic. A damaged entry applies nothing (its response is one
// error reply, whatever it held).
func (f fsm) ApplyBatch(logs []*raft.Log) []any {
	n := f.n
	out := make([]any, len(logs))
	a := n.srv.NewApplier()
	defer a.Close()
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		b, single, err := decodeLog(l.Data)
		if err != nil {
			n.log.Error("replica: refusing a damaged log entry", "index", l.Index, "err", err)
			out[i] = errReply(err.Error() + "; nothing was applied")
			continue
		}
		n.clock.Store(b.At)
		n.applyIndex.Store(l.Index)
		if single {
			out[i] = n.applyCmd(a, b.Cmds[0]) // move_apply.go
		} else {
			replies := make([][]byte, len(b.Cmds))
			for j, cmd := range b.Cmds {
				replies[j] = n.applyCmd(a, cmd)
			}
			out[i] = replies
		}
		n.clock.Store(0)
	}
	if err := a.Wait(); err != nil {
		// The entries are committed and applied in memory, but this
		// replica's engine refuses every write from now on: applying on
		// would make it differ from the others. Stop; the restart
		// rebuilds the engine from the raft snapshot and log, which
		// hold every committed entry (the engine's own log is not
		// needed for recovery).
		n.fatal(fmt.Errorf("replica: the engine's log failed after applying committed entries %d..%d: %w",
			logs[0].Index, logs[len(logs)-1].Index, err))
		failed := errReply("the command was committed and applied, but this node's engine log failed and it stops: " + err.Error())
		for i := range out {
			switch r := out[i].(type) {
			case []byte:
				out[i] = failed
			case [][]byte:
				for j := range r {
					r[j] = failed
				}
			}
		}
	}
	if len(logs) > 0 {
		n.applied.Store(logs[len(logs)-1].Index)
	}
	return out
}

var _ raft.BatchingFSM = fsm{}

// errReply is msg as a RESP error reply (CR and LF made blanks by the
// server's writer, so a reply can never break framing).
func errReply(msg string) []byte {
	var b bytes.Buffer
	w := server.NewWriter(&b)
	w.WriteError(msg)
	w.Flush()
	return b.Bytes()
}
