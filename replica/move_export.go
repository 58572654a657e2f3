package replica

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/memrl/memrl/server"
)

// The source side of a collection move: a consistent export (docs/CLUSTER.md
// "Resharding").
//
//	MEMRL.EXPORT <collection> <move id>       replicated; replies X, the
//	                                          raft index of its entry
//	MEMRL.EXPORTREAD <move id> <offset> <n>   local read: [X, size, bytes]
//	MEMRL.EXPORTDONE <move id>                local: removes the image
//
// Every replica applying MEMRL.EXPORT at raft index X could cut the same
// image ("every entry up to X"), but only the one applying it as leader
// does: it calls BeginExport on the FSM goroutine (a cheap consistent
// cut) and streams the image to DIR/export/<move id>.img in a goroutine,
// while entries after X go on applying. That the leader alone does it
// changes no replicated state (the image is a file outside the engine),
// so it cannot make replicas differ. The mover reads the image back in
// chunks with MEMRL.EXPORTREAD from the node that replied X; if that node
// no longer has it (restarted, or another node leads), the mover starts
// again from a new export.

// exportJob is one image being written or written.
type exportJob struct {
	index uint64 // X
	path  string
	done  chan struct{} // closed once err and size are set
	err   error
	size  int64
}

// exportSet is the node's images, by move id.
type exportSet struct {
	mu   sync.Mutex // guards jobs
	jobs map[string]*exportJob
}

// exportDir is the folder of the node's images: beside the engine's
// folder, not in it (an image is this node's alone, not replicated).
func (n *Node) exportDir() string { return filepath.Join(n.cfg.Dir, "export") }

var (
	errMoveID       = server.NewError("a move id is 1 to 40 characters of a-z, 0-9 and '-'")
	errNoExport     = server.NewError("no such export on this node (it was written by another node, or this node restarted); start the move again")
	errExportBusy   = &server.ReplyError{Code: "TRYAGAIN", Msg: "the export is still being written"}
	errApplyOnly    = server.NewError("this command is applied only through the raft log")
	errMoveInTx     = server.NewError("the MEMRL move commands cannot run inside MULTI/EXEC")
	errReplayFormat = server.NewError("MEMRL.REPLAY <collection> <count> then count × (<index> <sub> <at-ns> <argc> <args...>)")
)

// cmdExport is MEMRL.EXPORT, applied on every replica.
func (n *Node) cmdExport(c *server.Ctx, args [][]byte) error {
	if len(args) != 2 {
		return c.WrongArity()
	}
	if c.InTransaction() {
		return errMoveInTx
	}
	name, id := string(args[0]), string(args[1])
	if !validMoveID(id) {
		return errMoveID
	}
	coll, err := n.DB().Collection(name)
	if err != nil {
		return err
	}
	x := n.applyIndex.Load()
	if n.IsLeader() {
		exp, err := coll.BeginExport()
		if err != nil {
			return server.NewError("MEMRL.EXPORT: " + err.Error())
		}
		job := &exportJob{index: x, path: filepath.Join(n.exportDir(), id+".img"), done: make(chan struct{})}
		n.exports.mu.Lock()
		if n.exports.jobs == nil {
			// The first export since the node started: images an
			// earlier process left are of moves that have started
			// again (no node serves them any more).
			os.RemoveAll(n.exportDir())
			n.exports.jobs = map[string]*exportJob{}
		}
		if old := n.exports.jobs[id]; old != nil {
			<-old.done
			os.Remove(old.path)
		}
		n.exports.jobs[id] = job
		n.exports.mu.Unlock()
		// Close waits for it (n.wg) before it closes the engine; the
		// FSM goroutine, which adds it, has stopped by then.
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			defer exp.Close()
			job.size, job.err = writeImage(job.path, exp)
			if job.err != nil {
				n.log.Warn("replica: export failed", "collection", name, "move", id, "err", job.err)
			}
			close(job.done)
		}()
	}
	c.WriteInt(int64(x))
	return nil
}

// writeImage writes exp to path (through a temporary file, renamed once
// whole) and returns its size.
func writeImage(path string, exp io.WriterTo) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	size, err := exp.WriteTo(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, err
	}
	return size, nil
}

// cmdExportRead is MEMRL.EXPORTREAD <move id> <offset> <n>: up to n bytes
// of the image from offset, with X and the image's size.
func (n *Node) cmdExportRead(c *server.Ctx, args [][]byte) error {
	if len(args) != 3 {
		return c.WrongArity()
	}
	off, err1 := strconv.ParseInt(string(args[1]), 10, 64)
	max, err2 := strconv.ParseInt(string(args[2]), 10, 64)
	if err1 != nil || err2 != nil || off < 0 || max < 1 || max > 64<<20 {
		return server.NewError("MEMRL.EXPORTREAD <move id> <offset ≥ 0> <bytes 1..67108864>")
	}
	n.exports.mu.Lock()
	job := n.exports.jobs[string(args[0])]
	n.exports.mu.Unlock()
	if job == nil {
		return errNoExport
	}
	select {
	case <-job.done:
	default:
		return errExportBusy
	}
	if job.err != nil {
		return server.NewError("MEMRL.EXPORTREAD: the export failed: " + job.err.Error())
	}
	f, err := os.Open(job.path)
	if err != nil {
		return server.NewError("MEMRL.EXPORTREAD: " + err.Error())
	}
	defer f.Close()
	buf := make([]byte, min(max, max64(job.size-off, 0)))
	if _, err := f.ReadAt(buf, off); err != nil && len(buf) > 0 {
		return server.NewError("MEMRL.EXPORTREAD: " + err.Error())
	}
	c.WriteArrayHeader(3)
	c.WriteInt(int64(job.index))
	c.WriteInt(job.size)
	c.WriteBulk(buf)
	return nil
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// cmdExportDone is MEMRL.EXPORTDONE <move id>: removes the image.
func (n *Node) cmdExportDone(c *server.Ctx, args [][]byte) error {
	if len(args) != 1 {
		return c.WrongArity()
	}
	n.exports.mu.Lock()
	job := n.exports.jobs[string(args[0])]
	delete(n.exports.jobs, string(args[0]))
	n.exports.mu.Unlock()
	if job != nil {
		<-job.done
		os.Remove(job.path)
	}
	c.WriteOK()
	return nil
}
