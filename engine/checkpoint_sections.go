package engine

import (
	"fmt"

	"github.com/memrl/memrl/engine/ckptfile"
)

// Sections are how a checkpoint carries state that is neither a memory's
// core record nor a file size, without a new format version for every
// feature. From version 6 each collection ends with its sections, and each
// memory record with its own:
//
//	collection sections: n u16 | n × (tag u16 | len u32 | bytes)
//	memory sections:     n u8  | n × (tag u8  | len u32 | bytes)
//
// Tags are listed in package ckptfile, which lays out each section's
// bytes; the engine's file named beside each tag below makes and loads
// them. A collection's sections are read with its sizes
// (the last chunk of a copy, under the collection's read lock), and a delta
// carries them whole: applying a delta replaces the sections before it. A
// memory's sections travel with the memory (a delta that holds the memory
// holds all of them).
//
// An unknown tag is refused as damage (ErrCorruptCheckpoint): a section is
// state, and a build that does not know it would silently drop it at its
// next checkpoint. A tag appears at most once per collection or memory.
//
// The sections' framing, tags and layouts are package ckptfile's
// (ckptfile.Section, AppendCollSections, AppendMemSections,
// DecodeSections, and a codec per section); which tags this build knows,
// and what each one's state is in the engine, are decided here.
type ckptSection = ckptfile.Section

// Collection section tags (ckptfile's list). The owner of each one's
// bytes: sectSnapshots, the snapshot catalog and ghosts
// (snapshot_section.go); sectCompact, the generation of the collection's
// files (compact_files.go); sectPrunePolicy, the prune policy and its
// latest run (prune_policy_codec.go); sectTest is written by tests only.
// Each section's layout is package ckptfile's.
const (
	sectSnapshots   = ckptfile.SectSnapshots
	sectCompact     = ckptfile.SectCompact
	sectTest        = ckptfile.SectTest
	sectPrunePolicy = ckptfile.SectPrunePolicy
)

// Memory section tags (they fit a byte): memSectHistory is the memory's
// recent updates (history.go; the layout is package histlog's);
// memSectTest is written by tests only.
const (
	memSectHistory = ckptfile.MemSectHistory
	memSectTest    = ckptfile.MemSectTest
)

// knownCollSection reports whether this build understands a collection
// section tag.
func knownCollSection(tag uint16) bool {
	switch tag {
	case sectSnapshots, sectCompact, sectPrunePolicy:
		return true
	case sectTest:
		return testSections
	}
	return false
}

// knownMemSection reports whether this build understands a memory section
// tag.
func knownMemSection(tag uint16) bool {
	switch tag {
	case memSectTest:
		return testSections
	case memSectHistory:
		return true
	}
	return false
}

// checkMemSections validates the bytes of the memory sections that have
// a format of their own (decodeCkptMemory refuses the checkpoint if not).
func checkMemSections(s []ckptSection) error {
	for _, x := range s {
		if x.Tag == memSectHistory {
			if err := checkHistorySection(x.Data); err != nil {
				return err
			}
		}
	}
	return nil
}

// Test hooks: tests that set testSections write and read the test tags
// through these.
var (
	testSections     bool
	testCollSections func(c *Collection) []ckptSection
	testMemSections  func(c *Collection, id uint64) []ckptSection
	testLoadSections func(c *Collection, cc ckptCollection)
)

// ckptSectionsLocked returns the collection's sections for a checkpoint.
// The slices it returns must not be changed afterwards (they are encoded
// after the lock is released).
// REQUIRES: c.mu held for reading.
func (c *Collection) ckptSectionsLocked() []ckptSection {
	s := c.snapSectionLocked() // snapshot_section.go
	if b := c.encodePruneSectionLocked(); b != nil {
		s = append(s, ckptSection{Tag: sectPrunePolicy, Data: b})
	}
	if c.gen > 0 {
		s = append(s, ckptSection{Tag: sectCompact, Data: encodeCompactSection(c.gen)})
	}
	if testCollSections != nil {
		s = append(s, testCollSections(c)...)
	}
	return s
}

// memSectionsLocked returns memory id's sections for a checkpoint, under
// the same rule as ckptSectionsLocked.
// REQUIRES: c.mu held for reading.
func (c *Collection) memSectionsLocked(id uint64) []ckptSection {
	var s []ckptSection
	if h, ok := c.historySection(id); ok {
		s = append(s, h)
	}
	if testMemSections != nil {
		s = append(s, testMemSections(c, id)...)
	}
	return s
}

// loadSectionsLocked takes the collection's sections and its memories'
// from a checkpoint (after loadCheckpointLocked has loaded the memories).
// A section whose bytes do not decode is an ErrCorruptCheckpoint error.
// REQUIRES: c not yet shared.
func (c *Collection) loadSectionsLocked(cc ckptCollection) error {
	for _, s := range cc.sections {
		switch s.Tag {
		case sectPrunePolicy:
			if err := c.loadPruneSectionLocked(s.Data); err != nil {
				return err // already an ErrCorruptCheckpoint
			}
		case sectSnapshots:
			if err := c.loadSnapSectionLocked(s.Data, cc.nrows); err != nil {
				return fmt.Errorf("%w: collection %q: %v", ErrCorruptCheckpoint, cc.name, err)
			}
		}
	}
	c.loadHistoryLocked(cc)
	if testLoadSections != nil {
		testLoadSections(c, cc)
	}
	return nil
}

func appendCollSections(b []byte, s []ckptSection) []byte { return ckptfile.AppendCollSections(b, s) }
func appendMemSections(b []byte, s []ckptSection) []byte  { return ckptfile.AppendMemSections(b, s) }

// decodeSections reads n sections (ckptfile.DecodeSections).
func decodeSections(d *decoder, n int, tag func() uint16, known func(uint16) bool) ([]ckptSection, error) {
	return ckptfile.DecodeSections(d, n, tag, known)
}
