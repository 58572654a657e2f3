package replica

import (
	"sync"

	"github.com/hashicorp/raft"
)

// Pipelines raft abandons. hashicorp/raft (1.7.3) replicates to a
// follower through a pipeline: pipelineReplicate sends appends on it and
// a second goroutine, pipelineDecode, reads their answers from its
// Consumer channel. The NetworkTransport's pipeline holds
// MaxRPCsInFlight-2 answers and requests (0 with the default 2: its
// channels are unbuffered). When an answer carries a newer term (this
// node no longer leads) or refuses the append, pipelineDecode returns,
// and nothing reads the answers any more: the pipeline's decoder blocks
// handing over the next answer, and the sender, at its next append,
// blocks handing the decoder the request, for ever, since only the
// pipeline's Close (which the sender defers) ends those waits. The
// sender's goroutine, and the heartbeat goroutine it would stop, are
// raft's own, so raft's Shutdown waits for them: Close then gave up with
// ErrShutdownTimeout (TestTransferLeadership, 3 of 150 runs beside CPU
// hogs: the old leader's stack showed replicate -> pipelineSend ->
// netPipeline.AppendEntries blocked, its decoder blocked on doneCh and no
// pipelineDecode). Closing the connections does not help: neither waits
// on the connection.
//
// So the transport raft is given remembers every pipeline it hands out,
// and the node closes them all when it stops leading (watchLeadership;
// raft stops replicating then anyway) and when it closes: a blocked send
// returns ErrPipelineShutdown, the sender stops, and replication ends (or,
// had the node led again meanwhile, falls back to plain appends and
// builds a new pipeline). Not covered: an append refused while this node
// still leads leaves that follower's pipeline stuck until the node stops
// leading or closes.

// pipelineSet is the set of pipelines a node's transport handed raft.
type pipelineSet struct {
	mu   sync.Mutex // guards open and shut
	open map[*trackedPipeline]struct{}
	shut bool
}

func newPipelineSet() *pipelineSet {
	return &pipelineSet{open: map[*trackedPipeline]struct{}{}}
}

// track returns p, remembered until it is closed; once the set is shut
// it closes p and returns an error instead.
func (s *pipelineSet) track(p raft.AppendPipeline) (raft.AppendPipeline, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shut {
		p.Close()
		return nil, raft.ErrPipelineShutdown
	}
	tp := &trackedPipeline{AppendPipeline: p, s: s}
	s.open[tp] = struct{}{}
	return tp, nil
}

// closeAll closes every pipeline open now (this node stopped leading).
func (s *pipelineSet) closeAll() {
	s.mu.Lock()
	open := s.open
	s.open = map[*trackedPipeline]struct{}{}
	s.mu.Unlock()
	for p := range open {
		p.AppendPipeline.Close()
	}
}

// shutAll closes every pipeline and every one made later (Close).
func (s *pipelineSet) shutAll() {
	s.mu.Lock()
	s.shut = true
	s.mu.Unlock()
	s.closeAll()
}

// trackedPipeline leaves its set when raft closes it.
type trackedPipeline struct {
	raft.AppendPipeline
	s *pipelineSet
}

// Close closes the pipeline (raft.AppendPipeline).
func (p *trackedPipeline) Close() error {
	p.s.mu.Lock()
	delete(p.s.open, p)
	p.s.mu.Unlock()
	return p.AppendPipeline.Close()
}
