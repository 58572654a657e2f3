package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
)

// SlotsHeader is the first line of a slots file, version 1.
const SlotsHeader = "# memrl slots v1"

// SlotsFile is the slot map's name beside the nodes file.
const SlotsFile = "slots.tsv"

// SlotMap gives each slot its shard.
type SlotMap [NumSlots]uint16

// SlotRange is an inclusive range of slots.
type SlotRange struct{ First, Last int }

// DefaultSlots returns the slot map of shards shards: shard s owns
// [s*NumSlots/shards, (s+1)*NumSlots/shards).
// REQUIRES: 1 <= shards <= NumSlots.
func DefaultSlots(shards int) *SlotMap {
	m := new(SlotMap)
	for s := range shards {
		for i := s * NumSlots / shards; i < (s+1)*NumSlots/shards; i++ {
			m[i] = uint16(s)
		}
	}
	return m
}

// Ranges returns shard's slots as ascending, maximal ranges.
func (m *SlotMap) Ranges(shard int) []SlotRange {
	var out []SlotRange
	for i := 0; i < NumSlots; i++ {
		if int(m[i]) != shard {
			continue
		}
		j := i
		for j+1 < NumSlots && int(m[j+1]) == shard {
			j++
		}
		out = append(out, SlotRange{i, j})
		i = j
	}
	return out
}

// ParseSlots parses a slots file for a cluster of shards shards: every
// slot must be covered exactly once, by a shard in 0..shards-1. Errors
// name the line at fault.
func ParseSlots(data []byte, shards int) (*SlotMap, error) {
	lines, err := readFramed(data, SlotsHeader, SlotsFile)
	if err != nil {
		return nil, err
	}
	m := new(SlotMap)
	var owner [NumSlots]int // line that gave the slot, 0 if none
	for _, l := range lines {
		f := strings.Split(l.text, "\t")
		if len(f) != 3 {
			return nil, fmt.Errorf("%s, line %d: want 3 tab-separated fields (first-slot, last-slot, shard), got %d", SlotsFile, l.n, len(f))
		}
		first, err1 := parseSmallInt(f[0], NumSlots-1)
		last, err2 := parseSmallInt(f[1], NumSlots-1)
		shard, err3 := parseSmallInt(f[2], shards-1)
		if err := errors.Join(err1, err2); err != nil || first > last {
			return nil, fmt.Errorf("%s, line %d: want slots first <= last in 0..%d, got %q..%q", SlotsFile, l.n, NumSlots-1, truncateLine(f[0]), truncateLine(f[1]))
		}
		if err3 != nil {
			return nil, fmt.Errorf("%s, line %d: shard: %v (the nodes file names %d shards)", SlotsFile, l.n, err3, shards)
		}
		for i := first; i <= last; i++ {
			if owner[i] != 0 {
				return nil, fmt.Errorf("%s, line %d: slot %d already given on line %d", SlotsFile, l.n, i, owner[i])
			}
			owner[i] = l.n
			m[i] = uint16(shard)
		}
	}
	for i, o := range owner {
		if o == 0 {
			return nil, fmt.Errorf("%s: slot %d is given to no shard", SlotsFile, i)
		}
	}
	return m, nil
}

// FormatSlots returns m as a slots file, with its header and sum line.
func FormatSlots(m *SlotMap, shards int) []byte {
	var b bytes.Buffer
	b.WriteString("# first-slot\tlast-slot\tshard\n")
	for s := range shards {
		for _, r := range m.Ranges(s) {
			fmt.Fprintf(&b, "%d\t%d\t%d\n", r.First, r.Last, s)
		}
	}
	return frame(SlotsHeader, b.Bytes())
}

// WriteSlots replaces the slots file at path atomically.
func WriteSlots(path string, m *SlotMap, shards int) error {
	return writeFileAtomic(path, FormatSlots(m, shards))
}

// ReadSlots reads the slots file at path for a cluster of shards shards;
// if there is none, it returns DefaultSlots(shards).
func ReadSlots(path string, shards int) (*SlotMap, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return DefaultSlots(shards), nil
	}
	if err != nil {
		return nil, err
	}
	m, err := ParseSlots(data, shards)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}
