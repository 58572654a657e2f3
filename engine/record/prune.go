package record

import "fmt"

// The kinds of a TypePrunePolicy record.
const (
	PolicySet byte = 1 // the policy was set (or, without PolicyOn, removed)
	PolicyRan byte = 2 // the pruner applied the policy
)

// Policy flags: which criteria a Policy sets. A policy without PolicyOn
// is none (removed), and then every other field is zero.
const (
	PolicyOn byte = 1 << iota
	PolicyQBelow
	PolicyMinVisits
	PolicyOlder
	PolicyIdle
	PolicyMaxCount
	PolicyFilter
	PolicyAll = PolicyOn | PolicyQBelow | PolicyMinVisits | PolicyOlder | PolicyIdle | PolicyMaxCount | PolicyFilter
)

// Policy is a prune policy's fixed layout, as the record and the
// checkpoint's prune section carry it. Durations are nanoseconds; Filter
// is the filter's canonical text. This package checks only the layout
// (known flags; a policy turned off has nothing set): the engine checks
// the values as it checks a policy it is given.
type Policy struct {
	Flags       byte
	QBelow      float64
	MinVisits   uint64
	Older, Idle int64
	MaxCount    uint64
	Every       int64
	Filter      string
}

// PrunePolicy is one TypePrunePolicy record: of kind PolicySet, Policy
// was set at At; of kind PolicyRan, the pruner deleted Count memories at
// At.
type PrunePolicy struct {
	UID    uint64
	Kind   byte
	At     int64
	Policy Policy // PolicySet
	Count  uint64 // PolicyRan
}

// AppendPolicy appends p's fixed layout to b.
// REQUIRES: p.Filter fits a u16 length.
func AppendPolicy(b []byte, p Policy) []byte {
	b = append(b, p.Flags)
	b = putF64(b, p.QBelow)
	b = le.AppendUint64(b, p.MinVisits)
	b = le.AppendUint64(b, uint64(p.Older))
	b = le.AppendUint64(b, uint64(p.Idle))
	b = le.AppendUint64(b, p.MaxCount)
	b = le.AppendUint64(b, uint64(p.Every))
	b = le.AppendUint16(b, uint16(len(p.Filter)))
	return append(b, p.Filter...)
}

// ReadPolicy reads a policy's fixed layout from d. On a short read it
// returns a zero Policy and no error: the caller's d.Done reports it. It
// refuses unknown flags, a policy turned off with a field set, and
// filter text without the filter flag.
func ReadPolicy(d *Decoder) (Policy, error) {
	var p Policy
	p.Flags = d.U8()
	p.QBelow = d.F64()
	p.MinVisits = d.U64()
	p.Older = int64(d.U64())
	p.Idle = int64(d.U64())
	p.MaxCount = d.U64()
	p.Every = int64(d.U64())
	p.Filter = string(d.Take(int(d.U16())))
	if d.Err {
		return Policy{}, nil
	}
	if p.Flags&^PolicyAll != 0 {
		return Policy{}, fmt.Errorf("unknown flags %#x", p.Flags&^PolicyAll)
	}
	if p.Flags&PolicyOn == 0 && p != (Policy{}) {
		return Policy{}, fmt.Errorf("a policy turned off has fields set")
	}
	if p.Flags&PolicyFilter == 0 && p.Filter != "" {
		return Policy{}, fmt.Errorf("filter text without the filter flag")
	}
	return p, nil
}

// EncodePrunePolicy returns r's body.
// REQUIRES: r.Kind is PolicySet or PolicyRan.
func EncodePrunePolicy(r PrunePolicy) []byte {
	b := make([]byte, 0, 80)
	b = append(b, TypePrunePolicy)
	b = le.AppendUint64(b, r.UID)
	b = append(b, r.Kind)
	b = le.AppendUint64(b, uint64(r.At))
	if r.Kind == PolicySet {
		return AppendPolicy(b, r.Policy)
	}
	return le.AppendUint64(b, r.Count)
}

// DecodePrunePolicy decodes a TypePrunePolicy body, refusing an unknown
// kind and a policy ReadPolicy refuses. REQUIRES: b[0] is TypePrunePolicy.
func DecodePrunePolicy(b []byte) (PrunePolicy, error) {
	d := Decoder{B: b[1:]}
	var r PrunePolicy
	r.UID = d.U64()
	r.Kind = d.U8()
	r.At = int64(d.U64())
	switch r.Kind {
	case PolicySet:
		p, err := ReadPolicy(&d)
		if err != nil {
			return r, fmt.Errorf("%w: prune policy record: %v", ErrBad, err)
		}
		r.Policy = p
	case PolicyRan:
		r.Count = d.U64()
	default:
		if !d.Err {
			return r, fmt.Errorf("%w: prune policy record of unknown kind %d", ErrBad, r.Kind)
		}
	}
	return r, d.Done("prune policy")
}
