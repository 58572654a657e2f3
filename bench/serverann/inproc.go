package serverann

import (
	"fmt"
	"syscall"
	"time"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
)

// inProcess is the server's data folder opened in this process: the same
// collection and the same saved index, searched through
// engine.Collection.Retrieve with the options MEM.RETRIEVE is given.
type inProcess struct {
	db   *engine.DB
	coll *engine.Collection
	qs   *querySet
}

func openInProcess(dir, coll string, qs *querySet) (*inProcess, error) {
	db, err := engine.Open(dir, engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: func(string, ...any) {}})
	if err != nil {
		return nil, err
	}
	c, err := db.Collection(coll)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &inProcess{db: db, coll: c, qs: qs}, nil
}

func (p *inProcess) index() string {
	info, err := p.coll.Info()
	if err != nil {
		return err.Error()
	}
	return info.Index
}

func (p *inProcess) close() error { return p.db.Close() }

type engineSearcher struct {
	p   *inProcess
	opt engine.RetrieveOptions
}

func (p *inProcess) newSearcher() (searcher, error) {
	opt := engine.NewRetrieveOptions()
	opt.K1, opt.K2, opt.Lambda = 10, 10, 0
	return &engineSearcher{p: p, opt: opt}, nil
}

func (s *engineSearcher) search(i int, dst []int64) ([]int64, error) {
	res, err := s.p.coll.Retrieve(s.p.qs.vecs[i], s.opt)
	if err != nil {
		return nil, err
	}
	for _, r := range res {
		dst = append(dst, int64(r.ID))
	}
	return dst, nil
}

func (s *engineSearcher) close() {}

// selfCPU is this process's CPU time (user + system).
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
