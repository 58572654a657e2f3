package ckptfile

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/memrl/memrl/engine/record"
)

// TestCompactSection: the section round-trips; another version or length
// is ErrBadCompact.
func TestCompactSection(t *testing.T) {
	if g, err := DecodeCompact(AppendCompact(7)); g != 7 || err != nil {
		t.Fatalf("round trip: %d, %v", g, err)
	}
	good := AppendCompact(7)
	for name, b := range map[string][]byte{
		"version": append([]byte{2}, good[1:]...),
		"short":   good[:8],
		"long":    append(slices.Clone(good), 0),
		"empty":   nil,
	} {
		if _, err := DecodeCompact(b); !errors.Is(err, ErrBadCompact) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestPruneSection: the section round-trips, with and without a policy;
// another version, a cut, a byte added, a policy layout record refuses,
// and a policy the caller's check refuses are refused.
func TestPruneSection(t *testing.T) {
	ok := func(record.Policy) error { return nil }
	for _, p := range []Prune{
		{SetAt: 1, LastAt: 2, LastCount: 3, Policy: record.Policy{Flags: record.PolicyOn | record.PolicyFilter, Every: 5, Filter: ".a == 1"}},
		{LastAt: 2, LastCount: 3},
	} {
		if got, err := DecodePrune(AppendPrune(p), ok); err != nil || got != p {
			t.Fatalf("round trip: %+v, %v; want %+v", got, err, p)
		}
	}
	good := AppendPrune(Prune{SetAt: 1, Policy: record.Policy{Flags: record.PolicyOn, Every: 5}})
	badFlags := slices.Clone(good)
	badFlags[25] = 1 << 7
	for name, c := range map[string]struct {
		b     []byte
		check func(record.Policy) error
		want  string
	}{
		"version":      {append([]byte{2}, good[1:]...), ok, "version 2"},
		"short":        {good[:len(good)-1], ok, "bad length"},
		"long":         {append(slices.Clone(good), 0), ok, "bad length"},
		"empty":        {nil, ok, "bad length"},
		"layout":       {badFlags, ok, "unknown flags"},
		"check":        {good, func(record.Policy) error { return errors.New("EVERY too short") }, "EVERY too short"},
		"check before": {append(slices.Clone(good), 0), func(record.Policy) error { return errors.New("refused") }, "refused"},
	} {
		if _, err := DecodePrune(c.b, c.check); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// snapSection returns a snapshot section and what it holds.
func snapSection() ([]byte, []Snap, map[uint64]Ghost) {
	snaps := []Snap{{Seq: 1, Created: 10, Count: 2, Name: "a"}, {Seq: 3, Created: 11, Count: 0, Name: "bb"}}
	ghosts := map[uint64]Ghost{
		7: {ID: 7, Row: 1, PayOff: 2, PayLen: 3, Created: 4, Expires: 5, Key: "k", Attrs: []byte(`{"a":1}`)},
		9: {ID: 9, Row: 9},
	}
	return AppendSnap(4, snaps, len(ghosts), maps.Values(ghosts)), snaps, ghosts
}

func decodeSnapAll(b []byte, nrows uint32, name func(string) error) (uint64, []Snap, map[uint64]Ghost, error) {
	var snaps []Snap
	ghosts := map[uint64]Ghost{}
	next, err := DecodeSnap(b, nrows, func(s Snap) error {
		snaps = append(snaps, s)
		return name(s.Name)
	}, func(g Ghost) { ghosts[g.ID] = g })
	return next, snaps, ghosts, err
}

// TestSnapSection: the section round-trips; cut at every length or with a
// byte added, of another version, with a snapshot of seq 0 or not below
// nextSeq, a name the caller refuses, or a ghost past the rows, it is
// refused.
func TestSnapSection(t *testing.T) {
	anyName := func(string) error { return nil }
	b, snaps, ghosts := snapSection()
	next, gotSnaps, gotGhosts, err := decodeSnapAll(b, 10, anyName)
	if err != nil || next != 4 || !reflect.DeepEqual(gotSnaps, snaps) || !reflect.DeepEqual(gotGhosts, ghosts) {
		t.Fatalf("round trip: %d %+v %+v %v", next, gotSnaps, gotGhosts, err)
	}
	for n := range len(b) {
		if _, _, _, err := decodeSnapAll(b[:n], 10, anyName); err == nil {
			t.Fatalf("cut to %d of %d bytes: accepted", n, len(b))
		}
	}
	if _, _, _, err := decodeSnapAll(append(slices.Clone(b), 0), 10, anyName); !errors.Is(err, record.ErrBad) {
		t.Fatalf("a byte added: %v", err)
	}
	version := slices.Clone(b)
	version[0] = 2
	for name, c := range map[string]struct {
		b     []byte
		nrows uint32
		names func(string) error
		want  string
	}{
		"version":          {version, 10, anyName, "version 2"},
		"seq 0":            {AppendSnap(4, []Snap{{Seq: 0, Name: "a"}}, 0, maps.Values(map[uint64]Ghost{})), 10, anyName, "bad entry 0"},
		"seq past nextSeq": {AppendSnap(4, []Snap{{Seq: 4, Name: "a"}}, 0, maps.Values(map[uint64]Ghost{})), 10, anyName, "bad entry 0"},
		"name":             {b, 10, func(n string) error { return errors.New("no") }, `bad entry 0 ("a", seq 1)`},
		"ghost past rows":  {b, 9, anyName, "at row 9 of 9"},
	} {
		if _, _, _, err := decodeSnapAll(c.b, c.nrows, c.names); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
