package server

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/memrl/memrl/engine"
)

// MEM.CONFIG (docs/PROTOCOL.md "Maintenance", "Prune policies"): a
// collection's settings that are not part of MEM.CREATE's config. Today one:
// the background prune policy (engine/prune_policy.go).
//
// MEM.CONFIG is registered as a write (it is one with SET), so a read-only
// user cannot run it, GET included, and inside MULTI it is queued like every
// other write.

func (m memCommands) registerConfig(s *Server) {
	s.Register("MEM.CONFIG", 3, m.config)
}

// defaultPruneEvery is EVERY's default: how often a policy set without it
// is applied.
const defaultPruneEvery = 60 * time.Second

// MEM.CONFIG coll SET PRUNE [QBELOW q] [MINVISITS n] [OLDER s] [IDLE s]
// [MAXCOUNT n] [FILTER expr] [EVERY seconds]
// MEM.CONFIG coll SET PRUNE OFF
// MEM.CONFIG coll GET PRUNE
func (m memCommands) config(c *Ctx, args [][]byte) error {
	op, what := strings.ToUpper(string(args[1])), strings.ToUpper(string(args[2]))
	if what != "PRUNE" {
		return fmt.Errorf("syntax error: unknown MEM.CONFIG setting %q (the one setting is PRUNE)", args[2])
	}
	switch op {
	case "GET":
		if len(args) != 3 {
			return c.WrongArity()
		}
		coll, err := m.coll(args[0])
		if err != nil {
			return err
		}
		st, err := coll.PruneStatus()
		if err != nil {
			return err
		}
		writePrunePolicy(c, st.Policy)
		return nil
	case "SET":
		var p *engine.PrunePolicy
		if len(args) == 4 && strings.EqualFold(string(args[3]), "OFF") {
			p = nil
		} else {
			var err error
			if p, err = parsePrunePolicy(args[3:]); err != nil {
				return err
			}
		}
		coll, err := m.coll(args[0])
		if err != nil {
			return err
		}
		ticket, err := coll.SetPrunePolicyDeferred(p)
		if err != nil {
			return err
		}
		if ticket != 0 {
			if err := c.AfterDurable(m.wait, uint64(ticket)); err != nil {
				return err
			}
		}
		c.WriteOK()
		return nil
	}
	return fmt.Errorf("syntax error: MEM.CONFIG takes SET or GET, got %q", args[1])
}

// parsePrunePolicy parses SET PRUNE's options: MEM.PRUNE's criteria (parsed
// by the same code, checked by the engine as MEM.PRUNE's are) and EVERY.
func parsePrunePolicy(args [][]byte) (*engine.PrunePolicy, error) {
	p := &engine.PrunePolicy{Every: defaultPruneEvery}
	o, err := parsePruneWith(args, "MEM.CONFIG SET PRUNE", func(k string, a *argList) (bool, error) {
		switch k {
		case "EVERY":
			d, err := a.seconds("EVERY")
			if err == nil && d < engine.MinPruneEvery {
				err = fmt.Errorf("EVERY seconds must be at least %d", engine.MinPruneEvery/time.Second)
			}
			p.Every = d
			return true, err
		case "DRYRUN":
			return true, fmt.Errorf("syntax error: DRYRUN has no meaning in a prune policy (use MEM.PRUNE … DRYRUN to try one)")
		case "OFF":
			return true, fmt.Errorf("syntax error: OFF must be alone: MEM.CONFIG coll SET PRUNE OFF")
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	p.Prune = o
	return p, nil
}

// pruneSeconds renders a policy duration as whole seconds (the server sets
// only whole ones).
func pruneSeconds(d time.Duration) int64 { return int64(d / time.Second) }

// writePrunePolicy writes p as a flat map: the criteria set, then every
// (seconds); an empty array when p is nil.
func writePrunePolicy(c *Ctx, p *engine.PrunePolicy) {
	if p == nil {
		c.WriteArrayHeader(0)
		return
	}
	o := p.Prune
	n := 1
	for _, set := range []bool{o.HasQBelow, o.HasMinVisits, o.HasOlder, o.HasIdle, o.HasMaxCount, o.Filter != nil} {
		if set {
			n++
		}
	}
	c.WriteArrayHeader(2 * n)
	if o.HasQBelow {
		c.WriteBulkString("qbelow")
		c.WriteFloat64(o.QBelow)
	}
	if o.HasMinVisits {
		c.WriteBulkString("minvisits")
		c.WriteInt(int64(o.MinVisits))
	}
	if o.HasOlder {
		c.WriteBulkString("older")
		c.WriteInt(pruneSeconds(o.Older))
	}
	if o.HasIdle {
		c.WriteBulkString("idle")
		c.WriteInt(pruneSeconds(o.Idle))
	}
	if o.HasMaxCount {
		c.WriteBulkString("maxcount")
		c.WriteInt(int64(o.MaxCount))
	}
	if o.Filter != nil {
		c.WriteBulkString("filter")
		c.WriteBulkString(o.Filter.String())
	}
	c.WriteBulkString("every")
	c.WriteInt(pruneSeconds(p.Every))
}

// prunePolicyText is p in MEM.CONFIG … SET PRUNE's syntax (the filter
// quoted), or "" when p is nil: MEM.INFO's prune_policy.
func prunePolicyText(p *engine.PrunePolicy) string {
	if p == nil {
		return ""
	}
	o := p.Prune
	var parts []string
	if o.HasQBelow {
		parts = append(parts, "QBELOW", strconv.FormatFloat(o.QBelow, 'g', -1, 64))
	}
	if o.HasMinVisits {
		parts = append(parts, "MINVISITS", strconv.FormatUint(o.MinVisits, 10))
	}
	if o.HasOlder {
		parts = append(parts, "OLDER", strconv.FormatInt(pruneSeconds(o.Older), 10))
	}
	if o.HasIdle {
		parts = append(parts, "IDLE", strconv.FormatInt(pruneSeconds(o.Idle), 10))
	}
	if o.HasMaxCount {
		parts = append(parts, "MAXCOUNT", strconv.Itoa(o.MaxCount))
	}
	if o.Filter != nil {
		parts = append(parts, "FILTER", strconv.Quote(o.Filter.String()))
	}
	parts = append(parts, "EVERY", strconv.FormatInt(pruneSeconds(p.Every), 10))
	return strings.Join(parts, " ")
}

// infoPruneFields returns MEM.INFO's prune fields for coll: prune_policy
// (prunePolicyText) and last_prune, [unix ms, memories pruned] of the
// latest background run ([0, 0] if none). It counts as 4 elements of the
// reply's array.
func infoPruneFields(coll *engine.Collection) (func(c *Ctx), error) {
	st, err := coll.PruneStatus()
	if err != nil {
		return nil, err
	}
	return func(c *Ctx) {
		c.WriteBulkString("prune_policy")
		c.WriteBulkString(prunePolicyText(st.Policy))
		c.WriteBulkString("last_prune")
		c.WriteArrayHeader(2)
		var ms int64
		if !st.LastRun.IsZero() {
			ms = st.LastRun.UnixMilli()
		}
		c.WriteInt(ms)
		c.WriteInt(st.LastCount)
	}, nil
}
