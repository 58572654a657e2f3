package replica

import (
	"fmt"

	"github.com/hashicorp/raft"
)

// fatalLogStore makes a failed write of the raft log fatal, as a failed
// fsync of memrl's own WAL is (wal: "a failed fsync is fatal, never
// retried"). hashicorp/raft treats a failed StoreLogs as transient: a
// leader steps down, a follower answers the append with a failure and the
// leader sends it again, so the same fsync would be retried; after a
// failed fsync the kernel may have dropped the dirty pages and marked
// them clean, so a later fsync that succeeds proves nothing about them.
// The process must stop and recover from what is really on disk.
type fatalLogStore struct {
	raft.LogStore
	fatal func(error) // REQUIRES: does not return normally in production
}

func (s fatalLogStore) StoreLog(l *raft.Log) error {
	if err := s.LogStore.StoreLog(l); err != nil {
		s.fatal(fmt.Errorf("replica: raft log write failed: %w", err))
		return err
	}
	return nil
}

func (s fatalLogStore) StoreLogs(ls []*raft.Log) error {
	if err := s.LogStore.StoreLogs(ls); err != nil {
		s.fatal(fmt.Errorf("replica: raft log write failed: %w", err))
		return err
	}
	return nil
}
