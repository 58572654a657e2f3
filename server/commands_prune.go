package server

import (
	"fmt"
	"time"

	"github.com/memrl/memrl/engine"
)

// MEM.PRUNE (docs/PROTOCOL.md "Maintenance"): deleting memories by utility,
// age, disuse or a cap on their number. The grammar is parsed whole, and
// checked by the engine, before anything is read or changed.

func (m memCommands) registerPrune(s *Server) {
	s.Register("MEM.PRUNE", 1, m.prune)
}

// maxPruneSeconds bounds OLDER and IDLE (engine.MaxPruneAge).
const maxPruneSeconds = uint64(engine.MaxPruneAge / time.Second)

// seconds parses a non-negative whole number of seconds, at most
// maxPruneSeconds.
func (a *argList) seconds(what string) (time.Duration, error) {
	n, err := a.uint64(what + " seconds")
	if err != nil {
		return 0, err
	}
	if n > maxPruneSeconds {
		return 0, fmt.Errorf("%s seconds must be at most %d, got %d", what, maxPruneSeconds, n)
	}
	return time.Duration(n) * time.Second, nil
}

// parsePrune parses MEM.PRUNE's options (args after coll). Each option may
// be given once.
func parsePrune(args [][]byte) (engine.PruneOptions, error) {
	return parsePruneWith(args, "MEM.PRUNE", nil)
}

// parsePruneWith parses MEM.PRUNE's criteria as parsePrune does; extra, if
// not nil, sees each option keyword first and reports whether it took it
// (MEM.CONFIG … SET PRUNE adds EVERY and refuses DRYRUN: commands_config.go).
// cmd names the command in errors.
func parsePruneWith(args [][]byte, cmd string, extra func(k string, a *argList) (bool, error)) (engine.PruneOptions, error) {
	var o engine.PruneOptions
	a := argList{args: args}
	seen := map[string]bool{}
	for a.more() {
		k := a.keyword()
		if seen[k] {
			return o, fmt.Errorf("syntax error: %s given twice", k)
		}
		seen[k] = true
		if extra != nil {
			if took, err := extra(k, &a); err != nil {
				return o, err
			} else if took {
				continue
			}
		}
		var err error
		switch k {
		case "QBELOW":
			o.HasQBelow = true
			o.QBelow, err = a.float("QBELOW q")
		case "MINVISITS":
			o.HasMinVisits = true
			o.MinVisits, err = a.uint64("MINVISITS n")
		case "OLDER":
			o.HasOlder = true
			o.Older, err = a.seconds("OLDER")
		case "IDLE":
			o.HasIdle = true
			o.Idle, err = a.seconds("IDLE")
		case "MAXCOUNT":
			o.HasMaxCount = true
			var n uint64
			if n, err = a.uint64("MAXCOUNT n"); err == nil && n > engine.MaxID {
				err = fmt.Errorf("MAXCOUNT n must be at most %d, got %d", uint64(engine.MaxID), n)
			}
			o.MaxCount = int(n)
		case "FILTER":
			o.Filter, err = a.filterExpr()
		case "DRYRUN":
			o.DryRun = true
		default:
			return o, fmt.Errorf("syntax error: unknown %s option %q", cmd, k)
		}
		if err != nil {
			return o, err
		}
	}
	return o, nil
}

// MEM.PRUNE coll [QBELOW q] [MINVISITS n] [OLDER seconds] [IDLE seconds]
// [MAXCOUNT n] [FILTER expr] [DRYRUN]
//
// Deletes the memories the options select (engine.PruneOptions), like
// MEM.DEL, and replies how many once the deletes are durable; with DRYRUN
// replies how many it would delete and changes nothing.
func (m memCommands) prune(c *Ctx, args [][]byte) error {
	o, err := parsePrune(args[1:])
	if err != nil {
		return err
	}
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	n, ticket, err := coll.PruneContext(c.Context(), o)
	if err != nil {
		return err
	}
	if ticket != 0 {
		if err := c.AfterDurable(m.wait, uint64(ticket)); err != nil {
			return err
		}
	}
	c.WriteInt(int64(n))
	return nil
}
