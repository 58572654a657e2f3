package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Slot states of resharding (docs/CLUSTER.md "Resharding"): what CLUSTER
// SETSLOT sets on a shard. They are replicated state, like the shard's
// data: CLUSTER SETSLOT is proposed through the shard's raft log, every
// replica applies it (SlotStates.Set), and each replica keeps the table
// in a file of its engine's folder (SlotStateFile), which the raft
// snapshot ships with the engine's files and which Load reads back when
// a snapshot is installed. So a failover or a restart (the engine is
// rebuilt from the raft snapshot and log) finds the same states.
//
// Per slot, a shard holds at most one migration state (MIGRATING to a
// shard, or IMPORTING from one) and at most one owner set by SETSLOT
// NODE, which overrides slots.tsv for that slot on this shard's nodes
// until slots.tsv agrees (slots.tsv is rewritten on every node as the
// last step of a move; until every node reloads it, a node that still
// reads the old owner from it is sent on by that owner's MOVED).

// SlotMode is a slot's migration state on one shard.
type SlotMode uint8

const (
	// SlotStable: no migration (the zero value).
	SlotStable SlotMode = iota
	// SlotMigrating: this shard owns the slot and is moving its
	// collections to Shard; a command for a collection it no longer
	// has is sent there with -ASK.
	SlotMigrating
	// SlotImporting: Shard owns the slot and is moving its collections
	// here; a command preceded by ASKING is served here.
	SlotImporting
)

func (m SlotMode) String() string {
	switch m {
	case SlotMigrating:
		return "migrating"
	case SlotImporting:
		return "importing"
	}
	return "stable"
}

// SlotStateFile is the slot-state table's name in a replica's engine
// folder.
const SlotStateFile = "slotstate.tsv"

// SlotStateHeader is the first line of a slot-state file, version 1.
const SlotStateHeader = "# memrl slot states v1"

// ErrSlotState reports a slot-state file that does not parse: wrong
// header, missing or wrong checksum, a bad line. Such a file is never
// half-applied: Load keeps the table it had.
var ErrSlotState = errors.New("cluster: malformed or damaged slot-state file")

// Migration is one slot's migration: its mode and the other shard
// (the target when migrating, the source when importing).
type Migration struct {
	Mode  SlotMode
	Shard int
}

// slotTable is one immutable version of a shard's slot states.
type slotTable struct {
	mig   map[int]Migration // slot -> migration (never SlotStable)
	owner map[int]int       // slot -> owner set by SETSLOT NODE
}

var emptyTable = &slotTable{mig: map[int]Migration{}, owner: map[int]int{}}

func (t *slotTable) clone() *slotTable {
	n := &slotTable{mig: make(map[int]Migration, len(t.mig)+1), owner: make(map[int]int, len(t.owner)+1)}
	for k, v := range t.mig {
		n.mig[k] = v
	}
	for k, v := range t.owner {
		n.owner[k] = v
	}
	return n
}

// SlotStates is a shard's replicated slot-state table, as this node has
// applied it. Readers (the router, for every command) never block: the
// table is an immutable value behind an atomic pointer, replaced whole.
type SlotStates struct {
	mu sync.Mutex // serialises Set and Load; guards dir
	// dir is the folder the table's file is kept in (the replica's
	// current engine folder, given by Load); "" keeps it in memory only.
	dir string
	cur atomic.Pointer[slotTable]
}

// NewSlotStates returns an empty table kept in memory until Load gives it
// a folder (a node without replication never does: nothing would
// restore its state anyway).
func NewSlotStates() *SlotStates {
	s := &SlotStates{}
	s.cur.Store(emptyTable)
	return s
}

// Migration returns slot's migration state (SlotStable if none).
func (s *SlotStates) Migration(slot int) Migration {
	return s.cur.Load().mig[slot]
}

// Owner returns the owner SETSLOT NODE gave slot, if any.
func (s *SlotStates) Owner(slot int) (shard int, ok bool) {
	shard, ok = s.cur.Load().owner[slot]
	return shard, ok
}

// Overlay returns m with the owners SETSLOT NODE set (m itself when
// there are none; never modified).
func (s *SlotStates) Overlay(m *SlotMap) *SlotMap {
	t := s.cur.Load()
	if len(t.owner) == 0 {
		return m
	}
	out := *m
	for slot, shard := range t.owner {
		out[slot] = uint16(shard)
	}
	return &out
}

// Set applies one CLUSTER SETSLOT: mode SlotMigrating or SlotImporting
// with the other shard; SlotStable (STABLE) clears the slot's migration;
// node >= 0 (NODE node) clears it and makes node the slot's owner. The
// new table is written to the file first (temporary file, rename), so a
// snapshot pinned afterwards holds it; on an error nothing changes.
// The file is not fsynced: the engine folder is rebuilt from the raft
// snapshot and log at every start, which are durable; the file matters
// only for a snapshot taken while the node runs.
// REQUIRES: slot in [0, NumSlots), shards >= 0; called in raft log order
// (the state machine), so that every replica computes the same table.
func (s *SlotStates) Set(slot int, mode SlotMode, shard int, node int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.cur.Load().clone()
	delete(t.mig, slot)
	if mode != SlotStable {
		t.mig[slot] = Migration{Mode: mode, Shard: shard}
	}
	if node >= 0 {
		t.owner[slot] = node
	}
	if err := s.saveLocked(t); err != nil {
		return err
	}
	s.cur.Store(t)
	return nil
}

// saveLocked writes t to the file, if the table has one.
// REQUIRES: s.mu held.
func (s *SlotStates) saveLocked(t *slotTable) error {
	dir := s.dir
	if dir == "" {
		return nil
	}
	tmp := filepath.Join(dir, SlotStateFile+".tmp") // ".tmp": never pinned by a snapshot
	if err := os.WriteFile(tmp, formatSlotStates(t), 0o644); err != nil {
		return fmt.Errorf("cluster: write %s: %w", SlotStateFile, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, SlotStateFile)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cluster: write %s: %w", SlotStateFile, err)
	}
	return nil
}

// Load makes dir the table's folder (a replica's engine folder, when the
// replica opens one: fresh at its start, or a restored snapshot's) and
// replaces the table with the one in dir/SlotStateFile (an empty table
// if there is none: a fresh engine, or a snapshot taken before any
// SETSLOT). A damaged file is refused (ErrSlotState) and nothing changes.
func (s *SlotStates) Load(dir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := os.ReadFile(filepath.Join(dir, SlotStateFile))
	if errors.Is(err, os.ErrNotExist) {
		s.dir = dir
		s.cur.Store(emptyTable)
		return nil
	}
	if err != nil {
		return err
	}
	t, err := parseSlotStates(data)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, SlotStateFile), err)
	}
	s.dir = dir
	s.cur.Store(t)
	return nil
}

// String describes the table (for logs and CLUSTER INFO-like replies):
// "slot:mode:shard" and "slot:node:shard" items, by slot.
func (s *SlotStates) String() string {
	t := s.cur.Load()
	var items []string
	for _, l := range tableLines(t) {
		items = append(items, strings.ReplaceAll(l, "\t", ":"))
	}
	return strings.Join(items, " ")
}

// tableLines returns t's lines, sorted by slot: "slot\tmode\tshard".
func tableLines(t *slotTable) []string {
	type line struct {
		slot int
		text string
	}
	var ls []line
	for slot, m := range t.mig {
		ls = append(ls, line{slot, fmt.Sprintf("%d\t%s\t%d", slot, m.Mode, m.Shard)})
	}
	for slot, shard := range t.owner {
		ls = append(ls, line{slot, fmt.Sprintf("%d\tnode\t%d", slot, shard)})
	}
	sort.Slice(ls, func(i, j int) bool {
		if ls[i].slot != ls[j].slot {
			return ls[i].slot < ls[j].slot
		}
		return ls[i].text < ls[j].text
	})
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.text
	}
	return out
}

// formatSlotStates returns t as a slot-state file: the header, one line
// per state ("slot mode shard", tab-separated, mode one of migrating,
// importing, node) and the sum line.
func formatSlotStates(t *slotTable) []byte {
	var b bytes.Buffer
	b.WriteString("# slot\tmigrating|importing|node\tshard\n")
	for _, l := range tableLines(t) {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return frame(SlotStateHeader, b.Bytes())
}

// parseSlotStates parses a slot-state file; unlike nodes.tsv and
// slots.tsv, which people edit, its sum line is required.
func parseSlotStates(data []byte) (*slotTable, error) {
	if !bytes.Contains(data, []byte("\n"+sumPrefix)) {
		return nil, fmt.Errorf("%w: no sum line (cut short?)", ErrSlotState)
	}
	lines, err := readFramed(data, SlotStateHeader, SlotStateFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSlotState, err)
	}
	t := emptyTable.clone()
	for _, l := range lines {
		f := strings.Split(l.text, "\t")
		if len(f) != 3 {
			return nil, fmt.Errorf("%w: line %d: want 3 tab-separated fields, got %d", ErrSlotState, l.n, len(f))
		}
		slot, err1 := parseSmallInt(f[0], NumSlots-1)
		shard, err2 := parseSmallInt(f[2], NumSlots-1)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrSlotState, l.n, err)
		}
		switch f[1] {
		case "migrating", "importing":
			if _, dup := t.mig[slot]; dup {
				return nil, fmt.Errorf("%w: line %d: slot %d has two migration states", ErrSlotState, l.n, slot)
			}
			mode := SlotMigrating
			if f[1] == "importing" {
				mode = SlotImporting
			}
			t.mig[slot] = Migration{Mode: mode, Shard: shard}
		case "node":
			if _, dup := t.owner[slot]; dup {
				return nil, fmt.Errorf("%w: line %d: slot %d has two owners", ErrSlotState, l.n, slot)
			}
			t.owner[slot] = shard
		default:
			return nil, fmt.Errorf("%w: line %d: unknown state %q", ErrSlotState, l.n, truncateLine(f[1]))
		}
	}
	return t, nil
}
