package ckptfile

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/memrl/memrl/engine/record"
)

// coll is a collection as a test writes and reads it.
type coll struct {
	head  Collection
	tombs []uint64
	mems  []Memory
	end   End
}

// testColls returns collections of the given sizes whose memories lie
// within their sizes; every third memory has an expiry, a key and
// attributes, and every memory a section, which versions 4 and 6 hold.
func testColls(sizes ...int) []coll {
	var out []coll
	for i, n := range sizes {
		c := coll{head: Collection{UID: uint64(i + 1), Name: fmt.Sprintf("c%d", i),
			Config: record.Config{Dim: uint32(4 + i), Alpha: 0.3, NList: 16}, Indexed: []string{"kind"}},
			end: End{NRows: uint32(n + 1), PaySize: uint64(10 * n), NextID: uint64(n + 1), Sections: []Section{{Tag: 2, Data: []byte("gen")}}}}
		for j := range n {
			m := Memory{ID: uint64(j + 1), Row: uint32(j), PayOff: uint64(10 * j), PayLen: 10, Created: int64(j) << 32,
				Q: float64(j) / 7, Visits: uint64(j), LastReward: -1, RewardSum: 2.5, Updated: int64(j) << 33,
				Sections: []Section{{Tag: 1, Data: []byte{byte(j)}}}}
			if j%3 == 0 {
				m.Expires, m.Key, m.Attrs = 99, fmt.Sprint("k", j), []byte(`{"kind":"a"}`)
			}
			c.mems = append(c.mems, m)
		}
		out = append(out, c)
	}
	return out
}

// write encodes colls in version v with a Writer, feeding memories in
// uneven pieces as the engine's chunked copy does.
func write(t *testing.T, h Header, colls []coll) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	h.NColl = uint32(len(colls))
	w.Header(h)
	for _, c := range colls {
		w.BeginCollection(c.head)
		w.Tombstones(c.tombs)
		for rest := c.mems; len(rest) > 0; {
			n := min(len(rest), 1+len(rest)/3)
			part := rest[:n]
			w.Memories(len(part), func(i int, m *Memory) { *m = part[i] })
			rest = rest[n:]
		}
		w.EndCollection(c.end)
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// read decodes a whole file, keeping what the visitor is handed.
func read(b []byte, v Visitor) (Header, []coll, error) {
	body, err := Verify(b)
	if err != nil {
		return Header{}, nil, err
	}
	var out []coll
	var cur coll
	all := func(uint16) bool { return true }
	if v.KnownCollSection == nil {
		v.KnownCollSection = all
	}
	if v.KnownMemSection == nil {
		v.KnownMemSection = all
	}
	check := v
	v.Collection = func(c Collection) error {
		cur = coll{head: c}
		if check.Collection != nil {
			return check.Collection(c)
		}
		return nil
	}
	v.Tombstone = func(id uint64) { cur.tombs = append(cur.tombs, id) }
	v.Batch = func(n int) {
		if n < 1 || n > MaxBatch {
			panic(fmt.Sprint("batch of ", n))
		}
	}
	v.Memory = func(m *Memory) error {
		cur.mems = append(cur.mems, *m)
		if check.Memory != nil {
			return check.Memory(m)
		}
		return nil
	}
	v.End = func(e End) error {
		cur.end = e
		out = append(out, cur)
		if check.End != nil {
			return check.End(e)
		}
		return nil
	}
	h, err := DecodeBody(&record.Decoder{B: body[len(Magic):]}, v)
	return h, out, err
}

// atVersion returns colls as version v holds them.
func atVersion(colls []coll, v uint32) []coll {
	var out []coll
	for _, c := range colls {
		c.mems = append([]Memory(nil), c.mems...)
		if v < 5 {
			c.head.Indexed = nil
		}
		if v < 6 {
			c.end.Sections = nil
		}
		for i := range c.mems {
			if v < 6 {
				c.mems[i].Sections = nil
			}
			if v < 4 {
				c.mems[i].Expires, c.mems[i].Key, c.mems[i].Attrs = 0, "", nil
			}
		}
		out = append(out, c)
	}
	return out
}

// TestBodyRoundTrip: a Writer's file of every version it writes decodes
// through DecodeBody to what was written (less what the version does not
// hold), a collection of more than MaxBatch memories (in version
// Version) and deltas' tombstones included.
func TestBodyRoundTrip(t *testing.T) {
	for v := uint32(3); v <= Version; v++ {
		all := [][]int{nil, {0}, {1}, {3, 0, 7}}
		if v == Version {
			// Batches are cut alike in every version: one size above
			// MaxBatch is enough (it is the slow case under -race).
			all = append(all, []int{MaxBatch + 5})
		}
		for _, sizes := range all {
			colls := testColls(sizes...)
			h := Header{Version: v, Kind: KindFull, ChainID: 7, WalLSN: 11, NextUID: 12, NColl: uint32(len(colls))}
			if len(colls) > 0 {
				h.Kind, h.Seq = KindDelta, 2
				colls[0].tombs = []uint64{5, 1 << 40}
			}
			got, out, err := read(write(t, h, colls), Visitor{})
			if err != nil || got != h || !reflect.DeepEqual(out, atVersion(colls, v)) {
				t.Fatalf("version %d, sizes %v: %+v, %v", v, sizes, got, err)
			}
		}
	}
}

// TestBodyDamageRefused: a file whose collections are cut at every length
// (its checksum made right, so that the body's decoder meets the cut), or
// that has a byte past its last collection, is refused with ErrCorrupt.
func TestBodyDamageRefused(t *testing.T) {
	colls := testColls(3, 1)
	colls[1].tombs = []uint64{4}
	b := write(t, Header{Version: Version, Kind: KindDelta, ChainID: 1, Seq: 1}, colls)
	hdr := len(AppendHeader(nil, Header{Version: Version}))
	for n := hdr; n < len(b)-8; n++ {
		if _, _, err := read(resum(b[:n]), Visitor{}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut to %d of %d bytes: %v", n, len(b), err)
		}
	}
	long := append(append([]byte(nil), b[:len(b)-8]...), 0)
	if _, _, err := read(resum(long), Visitor{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a byte past the end: %v", err)
	}
}

// resum gives body (a file without its checksum) a right checksum.
func resum(body []byte) []byte {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.buf = append(w.buf, body...)
	if err := w.Finish(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// TestBodyRefusals: tombstones in a full checkpoint, a batch above
// MaxBatch or claiming more memories than the bytes hold, a version-1
// count that cannot fit, an unknown section tag, and what the visitor
// refuses (wrapped in ErrCorrupt, naming the collection and the memory)
// are refused.
func TestBodyRefusals(t *testing.T) {
	colls := testColls(2)
	full := Header{Version: Version, Kind: KindFull}
	good := write(t, full, colls)
	// The first memory batch's count: after the header, the collection's
	// head and the tombstones' end.
	at := len(AppendHeader(nil, full)) + 8 + 2 + len(colls[0].head.Name) + record.ConfigSize + 1 + 1 + len("kind") + 4
	if le.Uint32(good[at:]) != 1 { // write feeds the two memories one at a time
		t.Fatalf("batch count not at %d", at)
	}
	set := func(v uint32) []byte {
		b := append([]byte(nil), good[:len(good)-8]...)
		le.PutUint32(b[at:], v)
		return resum(b)
	}
	tombs := testColls(1)
	tombs[0].tombs = []uint64{3}
	v1 := append(AppendHeader(nil, Header{Version: 1, NColl: 1}), 1, 0, 0, 0, 0, 0, 0, 0, 0, 0) // uid 1, name ""
	v1 = append(record.AppendConfig(v1, record.Config{}), make([]byte, 4+8+8)...)
	v1 = le.AppendUint64(v1, 1<<40)
	cases := map[string]struct {
		b    []byte
		v    Visitor
		want string
	}{
		"tombstones in a full checkpoint": {write(t, full, tombs), Visitor{}, `collection "c0": tombstones in a full checkpoint`},
		"batch above MaxBatch":            {set(MaxBatch + 1), Visitor{}, "batch of 65537 memories"},
		"batch past the bytes":            {set(1000), Visitor{}, "batch of 1000 memories"},
		"version 1 count":                 {resum(v1), Visitor{}, "claims 1099511627776 memories"},
		"unknown collection section":      {good, Visitor{KnownCollSection: func(t uint16) bool { return t != 2 }}, "unknown section tag 2"},
		"unknown memory section":          {good, Visitor{KnownMemSection: func(t uint16) bool { return false }}, `collection "c0": memory 1: unknown section tag 1`},
		"collection refused":              {good, Visitor{Collection: func(Collection) error { return errors.New("no") }}, `collection "c0": no`},
		"memory refused":                  {good, Visitor{Memory: func(m *Memory) error { return errors.New("no") }}, `collection "c0": memory 1: no`},
		"end refused":                     {good, Visitor{End: func(End) error { return errors.New("no") }}, `collection "c0": no`},
	}
	for name, c := range cases {
		if _, _, err := read(c.b, c.v); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// TestMemoryInBounds: a memory past its collection's vector rows or
// payload bytes is out of bounds, and an offset near 2^64 does not wrap.
func TestMemoryInBounds(t *testing.T) {
	for _, c := range []struct {
		m  Memory
		ok bool
	}{
		{Memory{Row: 9, PayOff: 90, PayLen: 10}, true},
		{Memory{Row: 10}, false},
		{Memory{PayOff: 91, PayLen: 10}, false},
		{Memory{PayOff: 1<<64 - 1, PayLen: 2}, false},
	} {
		if got := c.m.InBounds(10, 100); got != c.ok {
			t.Errorf("%+v: InBounds %v", c.m, got)
		}
	}
}
