// Package linearize holds the porcupine model the fault tests check their
// histories against: clients reward and read a few memories of a
// collection with α = 1 and γ = 0, so a reward r sets Q to r and adds a
// visit; every reward value is unique, so a read's Q says which reward it
// saw. The in-process raft tests (replica) and the tests between real
// processes (cmd/memrl) share it.
package linearize

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// Input is an operation on memory ID: a reward of R, or a read.
type Input struct {
	Read bool
	ID   uint64
	R    float64
}

// Output is what the operation returned. Unknown is set when the outcome
// is unknown (a lost connection, a timeout, leadership lost): such an
// operation may take effect at any time after its call, so the caller
// must give it a Return after every other operation's (see Never).
type Output struct {
	Unknown bool
	Q       float64
	Visits  int64
}

// Never is the Return of an operation of unknown outcome: later than any
// real return, so porcupine may place it anywhere after its call.
const Never = int64(1) << 62

// memState is one memory's Q and visits in the model.
type memState struct {
	q      float64
	visits int64
}

// MemModel is the model of rewards and reads of memories with α = 1 and
// γ = 0, partitioned by memory id (operations on different memories
// commute). REQUIRES: every reward value in a history is unique.
var MemModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[uint64][]porcupine.Operation{}
		for _, op := range h {
			id := op.Input.(Input).ID
			by[id] = append(by[id], op)
		}
		out := make([][]porcupine.Operation, 0, len(by))
		for _, ops := range by {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return memState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(memState), input.(Input), output.(Output)
		if in.Read {
			return out.Q == s.q && out.Visits == s.visits, s
		}
		next := memState{q: in.R, visits: s.visits + 1}
		return out.Unknown || out.Q == in.R, next
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(Input), output.(Output)
		if in.Read {
			return fmt.Sprintf("get(%d) -> q=%v visits=%d", in.ID, out.Q, out.Visits)
		}
		return fmt.Sprintf("reward(%d, %v) -> %+v", in.ID, in.R, out)
	},
}
