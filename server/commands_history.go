package server

import (
	"fmt"

	"github.com/memrl/memrl/engine"
)

// MEM.HISTORY (docs/PROTOCOL.md "Maintenance"): a memory's recent updates,
// from the engine's bounded per-memory log (engine/history.go).

func (m memCommands) registerHistory(s *Server) {
	s.Register("MEM.HISTORY", 2, m.history, ReadOnly)
}

// MEM.HISTORY coll (id | KEY k) [COUNT n]
//
// Replies with an array, newest first, of [time (unix ms integer), reward
// (bulk float), q after (bulk float), visits (integer)]: at most n of
// them with COUNT (n >= 1), else every one the memory keeps. Empty for a
// memory never rewarded; an ERR for an unknown collection or memory.
func (m memCommands) history(c *Ctx, args [][]byte) error {
	a := argList{args: args, i: 1}
	ref, err := a.ref()
	if err != nil {
		return err
	}
	count := 0
	for a.more() {
		switch k := a.keyword(); {
		case k != "COUNT":
			return fmt.Errorf("syntax error: unknown MEM.HISTORY option %q", k)
		case count != 0:
			return fmt.Errorf("syntax error: COUNT given twice")
		}
		if count, err = a.int("COUNT n"); err != nil {
			return err
		}
		if count < 1 {
			return fmt.Errorf("COUNT n must be at least 1, got %d", count)
		}
	}
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	h, err := coll.History(ref, count)
	if err != nil {
		return err
	}
	c.WriteArrayHeader(len(h))
	for _, e := range h {
		c.WriteArrayHeader(4)
		c.WriteInt(e.Time.UnixMilli())
		c.WriteFloat64(e.Reward)
		c.WriteFloat64(e.Q)
		c.WriteInt(int64(min(e.Visits, engine.MaxID)))
	}
	return nil
}
