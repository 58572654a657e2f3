package replica

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// stuckPipeline's AppendEntries blocks until Close, as raft's
// netPipeline's does once nothing reads its answers.
type stuckPipeline struct {
	closed chan struct{}
	once   sync.Once
}

func (p *stuckPipeline) AppendEntries(*raft.AppendEntriesRequest, *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	<-p.closed
	return nil, raft.ErrPipelineShutdown
}
func (p *stuckPipeline) Consumer() <-chan raft.AppendFuture { return nil }
func (p *stuckPipeline) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}

// stuckTransport hands out stuckPipelines.
type stuckTransport struct {
	raft.Transport
	mu   sync.Mutex // guards made
	made []*stuckPipeline
}

func (t *stuckTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := &stuckPipeline{closed: make(chan struct{})}
	t.made = append(t.made, p)
	return p, nil
}

// TestAbandonedPipelineIsClosed: a send blocked on a pipeline raft
// abandoned returns once the node stops leading (closeAll), and after
// Close (shutAll) every pipeline, later ones too, is closed
// (transport_pipeline.go).
func TestAbandonedPipelineIsClosed(t *testing.T) {
	_, inner := raft.NewInmemTransport("a")
	st := &stuckTransport{Transport: inner}
	pipes := newPipelineSet()
	trans := guardTransport(st, newHeartbeatGuard(), pipes)
	send := func() chan error {
		p, err := trans.AppendEntriesPipeline("b", "b")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := p.AppendEntries(&raft.AppendEntriesRequest{}, &raft.AppendEntriesResponse{})
			done <- err
		}()
		return done
	}
	wait := func(done chan error, what string) {
		t.Helper()
		select {
		case err := <-done:
			if !errors.Is(err, raft.ErrPipelineShutdown) {
				t.Fatalf("%s: %v", what, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the send is still blocked", what)
		}
	}
	first := send()
	select {
	case err := <-first:
		t.Fatalf("the stuck send returned before any close: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	pipes.closeAll()
	wait(first, "after closeAll")

	second := send() // led again: a new pipeline works until the next close
	pipes.shutAll()
	wait(second, "after shutAll")
	if _, err := trans.AppendEntriesPipeline("b", "b"); !errors.Is(err, raft.ErrPipelineShutdown) {
		t.Fatalf("a pipeline after shutAll: %v", err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for i, p := range st.made {
		select {
		case <-p.closed:
		default:
			t.Fatalf("pipeline %d not closed", i)
		}
	}
}
