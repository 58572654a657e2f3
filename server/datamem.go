package server

import (
	"sync/atomic"
)

// Data memory and --maxmemory.
//
// Config.MaxMemory bounds client buffers (budget.go). MaxDataMemory bounds
// what the database's data holds in memory: vectors, indexes, attributes,
// the attribute index, records and history (engine.DataMemory, which INFO
// memory reports as used_memory_dataset and its parts). Once the data is
// at or past it, a command that adds data (growsData) is refused with
// "-OOM" before it runs, as Redis refuses writes at maxmemory under its
// noeviction policy: reads are still served, and deletes, drops, prunes
// and compactions still run, so a client can make room. A write admitted
// below the limit may pass it by what it adds (one MEM.MADD batch at
// most): the check is a few atomic loads before each write, not a
// reservation.

// growsData names the commands refused once the data is at MaxDataMemory:
// those that add memories, vectors, attributes, index entries or history.
var growsData = map[string]bool{
	"mem.create":     true,
	"mem.add":        true,
	"mem.madd":       true,
	"mem.reward":     true, // history
	"mem.setattr":    true,
	"mem.setpayload": true,
	"mem.setvector":  true, // a new vector row
	"mem.index":      true, // an attribute index
	"mem.rollback":   true, // revives memories
}

// errDataMemory is the reply to a write refused at MaxDataMemory: Redis's
// text for the same refusal.
var errDataMemory = &ReplyError{Code: "OOM", Msg: "command not allowed when used memory > 'maxmemory'"}

// dataMemory is the server's view of the database's data memory.
type dataMemory struct {
	used    atomic.Pointer[func() int64] // the data's bytes now (RegisterMem); nil before
	refused atomic.Int64                 // writes refused at the limit
}

// setDataUsed installs the function that reports the data's bytes.
func (s *Server) setDataUsed(fn func() int64) { s.data.used.Store(&fn) }

// dataUsed returns the data's bytes, or 0 with no database registered.
func (s *Server) dataUsed() int64 {
	if fn := s.data.used.Load(); fn != nil {
		return (*fn)()
	}
	return 0
}

// refuseGrowth returns errDataMemory if cmd adds data and the data is at
// or past Config.MaxDataMemory, else nil. The write path calls it for
// every command before running or queueing it (conn.exec).
func (s *Server) refuseGrowth(cmd *command) error {
	limit := s.cfg.MaxDataMemory
	if limit <= 0 || !growsData[cmd.name] {
		return nil
	}
	if s.dataUsed() < limit {
		return nil
	}
	s.data.refused.Add(1)
	return errDataMemory
}
