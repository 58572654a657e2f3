package replica

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// failingStore fails every write.
type failingStore struct{ raft.LogStore }

var errDisk = errors.New("fsync: input/output error")

func (failingStore) StoreLog(*raft.Log) error    { return errDisk }
func (failingStore) StoreLogs([]*raft.Log) error { return errDisk }

// TestFailedLogWriteIsFatal: a failed raft log write calls the fatal
// handler (the process exits) instead of letting raft retry it.
func TestFailedLogWriteIsFatal(t *testing.T) {
	var got []error
	s := fatalLogStore{LogStore: failingStore{raft.NewInmemStore()}, fatal: func(err error) { got = append(got, err) }}
	if err := s.StoreLog(&raft.Log{Index: 1}); !errors.Is(err, errDisk) {
		t.Fatal(err)
	}
	if err := s.StoreLogs([]*raft.Log{{Index: 2}}); !errors.Is(err, errDisk) {
		t.Fatal(err)
	}
	if len(got) != 2 || !errors.Is(got[0], errDisk) {
		t.Fatalf("fatal called with %v", got)
	}
	ok := fatalLogStore{LogStore: raft.NewInmemStore(), fatal: func(err error) { t.Fatalf("fatal on success: %v", err) }}
	if err := ok.StoreLogs([]*raft.Log{{Index: 1, Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
}
