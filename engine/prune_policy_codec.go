package engine

import (
	"fmt"
	"time"

	"github.com/memrl/memrl/engine/filter"
)

// The on-disk forms of a prune policy (prune_policy.go): its log record and
// its checkpoint section.
//
//	recPrunePolicy  uid u64 | kind u8 | at i64 | kind policySet: policy
//	                                           | kind policyRan: count u64
//	policy:         flags u8 | qBelow f64 | minVisits u64 | older i64 | idle i64 |
//	                maxCount u64 | every i64 | filter u16-len bytes
//	section (sectPrunePolicy), version 1:
//	                version u8 = 1 | setAt i64 | lastAt i64 | lastCount u64 | policy
//
// flags say which criteria are set (polOn: a policy at all; a policySet
// record without it turns the policy off, and then every other field is
// zero). Every field is always present, so a record has one size for a
// given filter length. The filter is its canonical text (filter.Expr's
// String), parsed again when read; SetPrunePolicy refuses a filter whose
// canonical text does not parse, so a logged policy always loads. Times are
// unix nanoseconds of Options.Now's clock. The log frames and checksums the
// record; the checkpoint's trailing xxh64 covers the section, and the
// section's version byte is for a later layout.
const (
	recPrunePolicy byte = 17

	policySet byte = 1 // the policy was set (or, without polOn, removed)
	policyRan byte = 2 // the pruner applied the policy

	pruneSectVersion byte = 1
)

// Policy flags.
const (
	polOn byte = 1 << iota
	polQBelow
	polMinVisits
	polOlder
	polIdle
	polMaxCount
	polFilter
	polAll = polOn | polQBelow | polMinVisits | polOlder | polIdle | polMaxCount | polFilter
)

// policyRec is one recPrunePolicy record.
type policyRec struct {
	uid    uint64
	kind   byte
	at     int64
	policy *PrunePolicy // policySet: nil removes the policy
	count  uint64       // policyRan: memories pruned
}

func encodePolicyRec(r policyRec) []byte {
	b := make([]byte, 0, 80)
	b = append(b, recPrunePolicy)
	b = le.AppendUint64(b, r.uid)
	b = append(b, r.kind)
	b = le.AppendUint64(b, uint64(r.at))
	if r.kind == policySet {
		return appendPolicy(b, r.policy)
	}
	return le.AppendUint64(b, r.count)
}

func decodePolicyRec(b []byte) (policyRec, error) {
	d := decoder{B: b[1:]}
	var r policyRec
	r.uid = d.U64()
	r.kind = d.U8()
	r.at = int64(d.U64())
	switch r.kind {
	case policySet:
		p, err := decodePolicy(&d)
		if err != nil {
			return r, fmt.Errorf("%w: prune policy record: %v", errBadRecord, err)
		}
		r.policy = p
	case policyRan:
		r.count = d.U64()
	default:
		if !d.Err {
			return r, fmt.Errorf("%w: prune policy record of unknown kind %d", errBadRecord, r.kind)
		}
	}
	return r, d.Done("prune policy")
}

// appendPolicy appends p's fixed layout (nil: off, all zero).
// REQUIRES: p valid (validate), so its filter's text fits a u16 length.
func appendPolicy(b []byte, p *PrunePolicy) []byte {
	var flags byte
	var o PruneOptions
	var every time.Duration
	var src string
	if p != nil {
		o, every = p.Prune, p.Every
		flags = polOn
		for _, f := range []struct {
			set  bool
			flag byte
		}{{o.HasQBelow, polQBelow}, {o.HasMinVisits, polMinVisits}, {o.HasOlder, polOlder},
			{o.HasIdle, polIdle}, {o.HasMaxCount, polMaxCount}, {o.Filter != nil, polFilter}} {
			if f.set {
				flags |= f.flag
			}
		}
		if o.Filter != nil {
			src = o.Filter.String()
		}
	}
	b = append(b, flags)
	b = putF64(b, o.QBelow)
	b = le.AppendUint64(b, o.MinVisits)
	b = le.AppendUint64(b, uint64(o.Older))
	b = le.AppendUint64(b, uint64(o.Idle))
	b = le.AppendUint64(b, uint64(o.MaxCount))
	b = le.AppendUint64(b, uint64(every))
	b = le.AppendUint16(b, uint16(len(src)))
	return append(b, src...)
}

// decodePolicy reads a policy and checks it as SetPrunePolicy does: a
// record or section that the checksum accepted but that holds a policy
// SetPrunePolicy would have refused is damage (or a newer build's), never
// applied.
func decodePolicy(d *decoder) (*PrunePolicy, error) {
	flags := d.U8()
	var o PruneOptions
	o.QBelow = d.F64()
	o.MinVisits = d.U64()
	o.Older = time.Duration(d.U64())
	o.Idle = time.Duration(d.U64())
	maxCount := d.U64()
	every := time.Duration(d.U64())
	src := string(d.Take(int(d.U16())))
	if d.Err {
		return nil, nil // the caller's d.Done reports it
	}
	if flags&^polAll != 0 {
		return nil, fmt.Errorf("unknown flags %#x", flags&^polAll)
	}
	if flags&polOn == 0 {
		if flags != 0 || o.QBelow != 0 || o.MinVisits != 0 || o.Older != 0 || o.Idle != 0 ||
			maxCount != 0 || every != 0 || src != "" {
			return nil, fmt.Errorf("a policy turned off has fields set")
		}
		return nil, nil
	}
	o.HasQBelow = flags&polQBelow != 0
	o.HasMinVisits = flags&polMinVisits != 0
	o.HasOlder = flags&polOlder != 0
	o.HasIdle = flags&polIdle != 0
	o.HasMaxCount = flags&polMaxCount != 0
	if maxCount > uint64(MaxID) {
		return nil, fmt.Errorf("MAXCOUNT %d out of range", maxCount)
	}
	o.MaxCount = int(maxCount)
	if flags&polFilter != 0 {
		e, err := filter.Parse(src)
		if err != nil {
			return nil, fmt.Errorf("filter: %v", err)
		}
		o.Filter = e
	} else if src != "" {
		return nil, fmt.Errorf("filter text without the filter flag")
	}
	p := &PrunePolicy{Prune: o, Every: every}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// encodePruneSection returns the collection's sectPrunePolicy section
// data, or nil when it has neither a policy nor a past run to keep.
// REQUIRES: c.mu held (for reading at least).
func (c *Collection) encodePruneSectionLocked() []byte {
	st := &c.prune
	if st.policy == nil && st.lastAt == 0 {
		return nil
	}
	b := make([]byte, 0, 80)
	b = append(b, pruneSectVersion)
	b = le.AppendUint64(b, uint64(st.setAt))
	b = le.AppendUint64(b, uint64(st.lastAt))
	b = le.AppendUint64(b, st.lastCount)
	return appendPolicy(b, st.policy)
}

// decodePruneSection reads a sectPrunePolicy section.
func decodePruneSection(data []byte) (pruneState, error) {
	var st pruneState
	d := decoder{B: data}
	if v := d.U8(); !d.Err && v != pruneSectVersion {
		return st, fmt.Errorf("prune policy section version %d, want %d", v, pruneSectVersion)
	}
	st.setAt = int64(d.U64())
	st.lastAt = int64(d.U64())
	st.lastCount = d.U64()
	p, err := decodePolicy(&d)
	if err != nil {
		return st, fmt.Errorf("prune policy section: %v", err)
	}
	st.policy = p
	if d.Err || len(d.B) != 0 {
		return st, fmt.Errorf("prune policy section: bad length")
	}
	return st, nil
}
