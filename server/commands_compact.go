package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/memrl/memrl/engine"
)

// MEM.COMPACT (docs/PROTOCOL.md "Maintenance", "Compaction"): rewriting a
// collection's files without its deleted memories, in the background.

func (m memCommands) registerCompact(s *Server) {
	s.Register("MEM.COMPACT", 1, m.compact, Local) // physical: each replica compacts its own files
}

// errCompactWaitInExec: MEM.COMPACT WAIT blocks for the whole compaction,
// which inside EXEC (holding the transaction lock exclusively) would hold
// up every client.
var errCompactWaitInExec = errors.New("MEM.COMPACT WAIT cannot run inside MULTI/EXEC (it would hold up every client until the compaction ends); queue MEM.COMPACT without WAIT")

// MEM.COMPACT coll [WAIT]
//
// Starts a compaction of the collection in the background and replies +OK
// once it is started (ERR if one is running). With WAIT it replies when
// the compaction is done, with a flat map: rows_before rows_after
// bytes_before bytes_after (integers) and seconds (a float).
func (m memCommands) compact(c *Ctx, args [][]byte) error {
	wait := false
	switch {
	case len(args) == 2 && strings.EqualFold(string(args[1]), "WAIT"):
		wait = true
	case len(args) == 2:
		return fmt.Errorf("syntax error: unknown MEM.COMPACT option %q", args[1])
	case len(args) > 2:
		return c.WrongArity()
	}
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	if !wait {
		if err := coll.CompactAsync(); err != nil {
			return err
		}
		c.WriteOK()
		return nil
	}
	cn := c.conn
	if cn.inExec {
		return errCompactWaitInExec
	}
	// Not with the transaction lock held: a compaction takes seconds to
	// minutes (tx.go; no engine lock is held here).
	paused := cn.pauseShared()
	st, err := coll.Compact()
	cn.resumeShared(paused)
	if err != nil {
		return err
	}
	c.WriteArrayHeader(10)
	c.WriteBulkString("rows_before")
	c.WriteInt(int64(st.RowsBefore))
	c.WriteBulkString("rows_after")
	c.WriteInt(int64(st.RowsAfter))
	c.WriteBulkString("bytes_before")
	c.WriteInt(st.BytesBefore)
	c.WriteBulkString("bytes_after")
	c.WriteInt(st.BytesAfter)
	c.WriteBulkString("seconds")
	c.WriteFloat64(st.Took.Seconds())
	return nil
}

// compactInfoLen is the number of MEM.INFO reply elements
// writeCompactInfo writes (four fields and their values).
const compactInfoLen = 8

// writeCompactInfo writes MEM.INFO's compaction fields: compacting (0 or
// 1), deleted_rows (rows a compaction would free:
// engine.Collection.DeletedRows), pinned_rows (dead rows snapshots pin,
// which it keeps: PinnedRows) and disk_bytes
// (engine.Collection.DiskBytes).
func writeCompactInfo(c *Ctx, coll *engine.Collection) {
	compacting := int64(0)
	if coll.Compacting() {
		compacting = 1
	}
	c.WriteBulkString("compacting")
	c.WriteInt(compacting)
	c.WriteBulkString("deleted_rows")
	c.WriteInt(int64(coll.DeletedRows()))
	c.WriteBulkString("pinned_rows")
	c.WriteInt(int64(coll.PinnedRows()))
	c.WriteBulkString("disk_bytes")
	c.WriteInt(coll.DiskBytes())
}
