package engine

import (
	"fmt"
	"time"

	"github.com/memrl/memrl/engine/ckptfile"
	"github.com/memrl/memrl/engine/filter"
	"github.com/memrl/memrl/engine/record"
)

// The on-disk forms of a prune policy (prune_policy.go): its log record and
// its checkpoint section.
//
//	recPrunePolicy  uid u64 | kind u8 | at i64 | kind policySet: policy
//	                                           | kind policyRan: count u64
//	policy:         flags u8 | qBelow f64 | minVisits u64 | older i64 | idle i64 |
//	                maxCount u64 | every i64 | filter u16-len bytes
//
// The checkpoint section (sectPrunePolicy) holds the policy, when it was
// set, and the latest run (ckptfile.Prune).
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
//
// The record's body and the policy's layout are package record's
// (record.PrunePolicy, record.Policy), the section's package ckptfile's;
// this file keeps the engine's names for them and the conversion to and
// from PrunePolicy (where a policy's values are checked).
const (
	recPrunePolicy = record.TypePrunePolicy

	policySet = record.PolicySet
	policyRan = record.PolicyRan

	pruneSectVersion = ckptfile.PruneVersion
)

// Policy flags.
const (
	polOn        = record.PolicyOn
	polQBelow    = record.PolicyQBelow
	polMinVisits = record.PolicyMinVisits
	polOlder     = record.PolicyOlder
	polIdle      = record.PolicyIdle
	polMaxCount  = record.PolicyMaxCount
	polFilter    = record.PolicyFilter
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
	w := record.PrunePolicy{UID: r.uid, Kind: r.kind, At: r.at, Count: r.count}
	if r.kind == policySet {
		w.Policy = policyWire(r.policy)
	}
	return record.EncodePrunePolicy(w)
}

func decodePolicyRec(b []byte) (policyRec, error) {
	w, err := record.DecodePrunePolicy(b)
	r := policyRec{uid: w.UID, kind: w.Kind, at: w.At, count: w.Count}
	if err != nil {
		return r, err
	}
	if r.kind == policySet {
		p, err := policyFromWire(w.Policy)
		if err != nil {
			return r, fmt.Errorf("%w: prune policy record: %v", errBadRecord, err)
		}
		r.policy = p
	}
	return r, nil
}

// policyWire returns p's fixed layout (nil: off, all zero).
func policyWire(p *PrunePolicy) record.Policy {
	if p == nil {
		return record.Policy{}
	}
	o := p.Prune
	w := record.Policy{Flags: polOn, QBelow: o.QBelow, MinVisits: o.MinVisits, Older: int64(o.Older),
		Idle: int64(o.Idle), MaxCount: uint64(o.MaxCount), Every: int64(p.Every)}
	for _, f := range []struct {
		set  bool
		flag byte
	}{{o.HasQBelow, polQBelow}, {o.HasMinVisits, polMinVisits}, {o.HasOlder, polOlder},
		{o.HasIdle, polIdle}, {o.HasMaxCount, polMaxCount}, {o.Filter != nil, polFilter}} {
		if f.set {
			w.Flags |= f.flag
		}
	}
	if o.Filter != nil {
		w.Filter = o.Filter.String()
	}
	return w
}

// appendPolicy appends p's fixed layout (nil: off, all zero).
// REQUIRES: p valid (validate), so its filter's text fits a u16 length.
func appendPolicy(b []byte, p *PrunePolicy) []byte {
	return record.AppendPolicy(b, policyWire(p))
}

// policyFromWire checks a policy read from a record or a section as
// SetPrunePolicy checks one: a record or section that the checksum
// accepted but that holds a policy SetPrunePolicy would have refused is
// damage (or a newer build's), never applied. A policy turned off is nil.
func policyFromWire(w record.Policy) (*PrunePolicy, error) {
	if w.Flags&polOn == 0 {
		return nil, nil // ReadPolicy checked that nothing else is set
	}
	var o PruneOptions
	o.QBelow, o.MinVisits = w.QBelow, w.MinVisits
	o.Older, o.Idle = time.Duration(w.Older), time.Duration(w.Idle)
	o.HasQBelow = w.Flags&polQBelow != 0
	o.HasMinVisits = w.Flags&polMinVisits != 0
	o.HasOlder = w.Flags&polOlder != 0
	o.HasIdle = w.Flags&polIdle != 0
	o.HasMaxCount = w.Flags&polMaxCount != 0
	if w.MaxCount > uint64(MaxID) {
		return nil, fmt.Errorf("MAXCOUNT %d out of range", w.MaxCount)
	}
	o.MaxCount = int(w.MaxCount)
	if w.Flags&polFilter != 0 {
		e, err := filter.Parse(w.Filter)
		if err != nil {
			return nil, fmt.Errorf("filter: %v", err)
		}
		o.Filter = e
	}
	p := &PrunePolicy{Prune: o, Every: time.Duration(w.Every)}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// encodePruneSection returns the collection's sectPrunePolicy section
// data (ckptfile.AppendPrune), or nil when it has neither a policy nor a
// past run to keep.
// REQUIRES: c.mu held (for reading at least).
func (c *Collection) encodePruneSectionLocked() []byte {
	st := &c.prune
	if st.policy == nil && st.lastAt == 0 {
		return nil
	}
	return ckptfile.AppendPrune(ckptfile.Prune{SetAt: st.setAt, LastAt: st.lastAt, LastCount: st.lastCount,
		Policy: policyWire(st.policy)})
}

// decodePruneSection reads a sectPrunePolicy section
// (ckptfile.DecodePrune), its policy checked as SetPrunePolicy checks one
// (policyFromWire).
func decodePruneSection(data []byte) (pruneState, error) {
	var p *PrunePolicy
	x, err := ckptfile.DecodePrune(data, func(w record.Policy) error {
		var err error
		p, err = policyFromWire(w)
		return err
	})
	return pruneState{policy: p, setAt: x.SetAt, lastAt: x.LastAt, lastCount: x.LastCount}, err
}
