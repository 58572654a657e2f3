package client

import (
	"context"
	"math"
	"time"
)

// PrunePolicy is a collection's background prune (MEM.CONFIG coll SET
// PRUNE, docs/PROTOCOL.md "Prune policies"): the server applies the
// criteria every Every, as MEM.PRUNE would, first Every after the policy is
// set. The policy survives restarts.
type PrunePolicy struct {
	// PruneOptions are the criteria, as for Prune; DryRun must be false
	// (the server refuses it in a policy).
	PruneOptions
	// Every is the time between runs, in whole seconds (rounded up), at
	// least a second; 0 means the server's default (60 s).
	Every time.Duration
}

func setPrunePolicySpec(coll string, p PrunePolicy) spec[struct{}] {
	args := appendPruneArgs([]any{"MEM.CONFIG", coll, "SET", "PRUNE"}, p.PruneOptions)
	if p.DryRun {
		args = append(args, "DRYRUN") // for the server to refuse, not to drop silently
	}
	if p.Every != 0 {
		args = append(args, "EVERY", int64(math.Ceil(p.Every.Seconds())))
	}
	return spec[struct{}]{args: args, parse: parseOK}
}

func prunePolicyOffSpec(coll string) spec[struct{}] {
	return spec[struct{}]{args: []any{"MEM.CONFIG", coll, "SET", "PRUNE", "OFF"}, parse: parseOK}
}

func getPrunePolicySpec(coll string) spec[*PrunePolicy] {
	return spec[*PrunePolicy]{args: []any{"MEM.CONFIG", coll, "GET", "PRUNE"}, parse: parsePrunePolicy}
}

// parsePrunePolicy reads GET PRUNE's flat map (nil for an empty one).
func parsePrunePolicy(v any) (*PrunePolicy, error) {
	m, err := parseFields(v)
	if err != nil || len(m) == 0 {
		return nil, err
	}
	p := &PrunePolicy{}
	seconds := func(dst *time.Duration) func(any) error {
		return func(v any) error {
			n, err := parseInt(v)
			*dst = time.Duration(n) * time.Second
			return err
		}
	}
	fields := map[string]func(any) error{
		"qbelow": func(v any) error {
			f, err := parseFloat(v)
			p.QBelow = &f
			return err
		},
		"minvisits": func(v any) error { return into(&p.MinVisits, v, parseInt) },
		"older":     seconds(&p.Older),
		"idle":      seconds(&p.Idle),
		"maxcount": func(v any) error {
			n, err := parseInt(v)
			p.MaxCount = &n
			return err
		},
		"filter": func(v any) error { return into(&p.Filter, v, parseString) },
		"every":  seconds(&p.Every),
	}
	for k, x := range m {
		if f, ok := fields[k]; ok {
			if err := f(x); err != nil {
				return nil, fieldErr("MEM.CONFIG GET PRUNE", k, err)
			}
		}
	}
	if p.Every == 0 {
		return nil, fieldErr("MEM.CONFIG GET PRUNE", "every", badReply("a policy with its period", v))
	}
	return p, nil
}

// SetPrunePolicy gives collection coll the background prune policy p,
// replacing any it had (MEM.CONFIG coll SET PRUNE …); it is durable when
// SetPrunePolicy returns. Errors: ErrBadParam, ErrBadNumber, ErrSyntax (a
// bad value or option), ErrFilter, ErrNoCollection, or an *Error naming the
// rule (no criterion); a refused policy changes nothing.
func (c *Client) SetPrunePolicy(ctx context.Context, coll string, p PrunePolicy) error {
	_, err := run(ctx, c.rdb, setPrunePolicySpec(coll, p))
	return err
}

// PrunePolicyOff removes collection coll's prune policy, if any
// (MEM.CONFIG coll SET PRUNE OFF).
func (c *Client) PrunePolicyOff(ctx context.Context, coll string) error {
	_, err := run(ctx, c.rdb, prunePolicyOffSpec(coll))
	return err
}

// PrunePolicy returns collection coll's prune policy, or nil when it has
// none (MEM.CONFIG coll GET PRUNE).
func (c *Client) PrunePolicy(ctx context.Context, coll string) (*PrunePolicy, error) {
	return run(ctx, c.rdb, getPrunePolicySpec(coll))
}

// SetPrunePolicy queues Client.SetPrunePolicy.
func (p *Pipeline) SetPrunePolicy(ctx context.Context, coll string, pol PrunePolicy) *Cmd[struct{}] {
	return queue(ctx, p, setPrunePolicySpec(coll, pol))
}

// PrunePolicyOff queues Client.PrunePolicyOff.
func (p *Pipeline) PrunePolicyOff(ctx context.Context, coll string) *Cmd[struct{}] {
	return queue(ctx, p, prunePolicyOffSpec(coll))
}

// PrunePolicy queues Client.PrunePolicy.
func (p *Pipeline) PrunePolicy(ctx context.Context, coll string) *Cmd[*PrunePolicy] {
	return queue(ctx, p, getPrunePolicySpec(coll))
}
