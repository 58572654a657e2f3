package replica

import (
	"bufio"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/engine/image"
)

// An import's long step off the state machine's goroutine
// (docs/CLUSTER.md "Resharding", step 3, Import).
//
// MEMRL.IMPORT PREPARE <id> <chunks>, an entry the mover sends after the
// last CHUNK, makes every replica, as it applies it, start reading,
// verifying and writing the staged image (engine.DB.PrepareImport) in a
// goroutine: a prepJob. Nothing of it is visible and nothing replicated
// changes. The mover then waits until the leader's job is done
// (MEMRL.IMPORTREADY) and sends COMMIT, whose apply waits for the job
// (done by then on the leader; a follower behind blocks only its own
// apply) and makes the collection visible (PreparedImport.Commit:
// milliseconds), so the shard's other writes wait milliseconds, not the
// seconds the whole import takes.
//
// The outcome is decided by COMMIT alone, the same on every replica: a
// job is only a head start. A replica that has no job for the move at
// COMMIT (it restarted or installed a snapshot after PREPARE, or the
// mover sent no PREPARE) prepares there, on the apply goroutine, from the
// staged image, which snapshots ship. A refusal of the image (errors
// wrapping image.ErrCorrupt, image.ErrVersion, engine.ErrBadImage or
// engine.ErrCorruptCheckpoint: the same bytes give the same answer) is
// the entry's error on every replica; any other error (disk full, too
// many open files, a closed engine) is local, and this replica would
// diverge from the others if it went on, so it stops the process
// (Node.fatal), as for a failed engine log (fsm.go).

// prepareHook, if set (tests), runs in a job's goroutine before it
// prepares.
var prepareHook func(id string)

// prepJob is one replica's preparation of move id's staged image.
type prepJob struct {
	db   *engine.DB    // the engine it prepares into
	done chan struct{} // closed when p, err are set

	// stop, set by cancel, makes the job's reads of the image fail, so
	// that a cancelled preparation ends soon (stopAll waits for it).
	stop atomic.Bool

	mu        sync.Mutex // guards cancelled, and p once done
	cancelled bool
	p         *engine.PreparedImport
	err       error
}

// prepJobs are a node's jobs by move id.
type prepJobs struct {
	mu   sync.Mutex // guards jobs
	jobs map[string]*prepJob
}

// start starts preparing move id's staged image, staged at path, into
// db, unless a job for it already runs there.
func (s *prepJobs) start(db *engine.DB, id, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j, ok := s.jobs[id]; ok {
		if j.db == db {
			return // a repeated PREPARE
		}
		j.cancel()
	}
	if s.jobs == nil {
		s.jobs = make(map[string]*prepJob)
	}
	j := &prepJob{db: db, done: make(chan struct{})}
	s.jobs[id] = j
	go j.run(id, path)
}

func (j *prepJob) run(id, path string) {
	if h := prepareHook; h != nil {
		h(id)
	}
	p, err := prepareFile(j.db, path, &j.stop)
	j.mu.Lock()
	j.p, j.err = p, err
	if j.cancelled && p != nil {
		p.Abort()
		j.p = nil
	}
	j.mu.Unlock()
	close(j.done)
}

// cancel aborts the job's preparation, now or when it ends.
func (j *prepJob) cancel() {
	j.stop.Store(true)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.cancelled = true
	select {
	case <-j.done:
		if j.p != nil {
			j.p.Abort()
			j.p = nil
		}
	default:
	}
}

// take removes move id's job for db and returns it, nil if there is
// none (a job for another engine is cancelled).
func (s *prepJobs) take(db *engine.DB, id string) *prepJob {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return nil
	}
	delete(s.jobs, id)
	if j.db != db {
		j.cancel()
		return nil
	}
	return j
}

// drop cancels move id's job, if any (DISCARD, a superseding BEGIN).
func (s *prepJobs) drop(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j, ok := s.jobs[id]; ok {
		j.cancel()
		delete(s.jobs, id)
	}
}

// ready reports whether move id's job for db has ended.
func (s *prepJobs) ready(db *engine.DB, id string) bool {
	s.mu.Lock()
	j, ok := s.jobs[id]
	s.mu.Unlock()
	if !ok || j.db != db {
		return false
	}
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// has reports whether db has a job for move id.
func (s *prepJobs) has(db *engine.DB, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	return ok && j.db == db
}

// stopAll cancels every job and waits for them to end: before the engine
// they prepare into is closed (PreparedImport: Commit or Abort first).
func (s *prepJobs) stopAll() {
	s.mu.Lock()
	jobs := s.jobs
	s.jobs = nil
	s.mu.Unlock()
	for _, j := range jobs {
		j.cancel()
		<-j.done
	}
}

// wait waits for the job to end and returns its outcome; the caller owns
// the PreparedImport.
func (j *prepJob) wait() (*engine.PreparedImport, error) {
	<-j.done
	j.mu.Lock()
	defer j.mu.Unlock()
	p := j.p
	j.p = nil
	return p, j.err
}

// errPrepCancelled is a cancelled job's read error (its outcome is never
// used).
var errPrepCancelled = errors.New("replica: preparation cancelled")

// stopReader fails its reads once stop is set.
type stopReader struct {
	r    io.Reader
	stop *atomic.Bool
}

func (s stopReader) Read(b []byte) (int, error) {
	if s.stop.Load() {
		return 0, errPrepCancelled
	}
	return s.r.Read(b)
}

// prepareFile prepares the image at path into db; if stop (not nil) is
// set meanwhile, it fails.
func prepareFile(db *engine.DB, path string, stop *atomic.Bool) (*engine.PreparedImport, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if stop != nil {
		r = stopReader{f, stop}
	}
	return db.PrepareImport(bufio.NewReaderSize(r, 1<<20))
}

// imageRefused reports whether err is a refusal of the image itself,
// which every replica importing the same bytes meets alike (see above).
func imageRefused(err error) bool {
	return errors.Is(err, image.ErrCorrupt) || errors.Is(err, image.ErrVersion) ||
		errors.Is(err, engine.ErrBadImage) || errors.Is(err, engine.ErrCorruptCheckpoint)
}
