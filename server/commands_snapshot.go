package server

// MEM.SNAPSHOT, MEM.SNAPSHOTS, MEM.ROLLBACK, MEM.DELSNAPSHOT
// (docs/PROTOCOL.md "Snapshots and rollback"): named points of a
// collection and the return to one. Every one but MEM.SNAPSHOTS is a write
// (a logged change), queued in MULTI and refused to read-only users like
// the other writes.

func (m memCommands) registerSnapshot(s *Server) {
	s.Register("MEM.SNAPSHOT", 2, m.snapshot)
	s.Register("MEM.SNAPSHOTS", 1, m.snapshots, ReadOnly)
	s.Register("MEM.ROLLBACK", 2, m.rollback)
	s.Register("MEM.DELSNAPSHOT", 2, m.delSnapshot)
}

// MEM.SNAPSHOT coll name
//
// Records the collection's present state under name; +OK once the
// snapshot's file and log record are durable.
func (m memCommands) snapshot(c *Ctx, args [][]byte) error {
	if len(args) != 2 {
		return c.WrongArity()
	}
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	t, err := coll.SnapshotDeferred(string(args[1]))
	if err != nil {
		return err
	}
	if err := c.AfterDurable(m.wait, uint64(t)); err != nil {
		return err
	}
	c.WriteOK()
	return nil
}

// MEM.SNAPSHOTS coll
//
// Lists the snapshots, oldest first, each as [name, created (unix ms),
// memories].
func (m memCommands) snapshots(c *Ctx, args [][]byte) error {
	if len(args) != 1 {
		return c.WrongArity()
	}
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	list, err := coll.Snapshots()
	if err != nil {
		return err
	}
	c.WriteArrayHeader(len(list))
	for _, s := range list {
		c.WriteArrayHeader(3)
		c.WriteBulkString(s.Name)
		c.WriteInt(s.Created.UnixMilli())
		c.WriteInt(int64(s.Memories))
	}
	return nil
}

// MEM.ROLLBACK coll name
//
// Restores the collection to snapshot name and replies how many memories
// changed (deleted, restored or revived), once durable.
func (m memCommands) rollback(c *Ctx, args [][]byte) error {
	if len(args) != 2 {
		return c.WrongArity()
	}
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	n, t, err := coll.RollbackDeferred(string(args[1]))
	if err != nil {
		return err
	}
	if t != 0 {
		if err := c.AfterDurable(m.wait, uint64(t)); err != nil {
			return err
		}
	}
	c.WriteInt(int64(n))
	return nil
}

// MEM.DELSNAPSHOT coll name
//
// Deletes snapshot name: :1, or :0 when there is none.
func (m memCommands) delSnapshot(c *Ctx, args [][]byte) error {
	if len(args) != 2 {
		return c.WrongArity()
	}
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	ok, t, err := coll.DeleteSnapshotDeferred(string(args[1]))
	if err != nil {
		return err
	}
	if !ok {
		c.WriteInt(0)
		return nil
	}
	if err := c.AfterDurable(m.wait, uint64(t)); err != nil {
		return err
	}
	c.WriteInt(1)
	return nil
}
