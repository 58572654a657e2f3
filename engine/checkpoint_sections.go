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
// Tags are listed below, each owned by the file named beside it, which
// defines the bytes. A collection's sections are read with its sizes
// (the last chunk of a copy, under the collection's read lock), and a delta
// carries them whole: applying a delta replaces the sections before it. A
// memory's sections travel with the memory (a delta that holds the memory
// holds all of them).
//
// An unknown tag is refused as damage (ErrCorruptCheckpoint): a section is
// state, and a build that does not know it would silently drop it at its
// next checkpoint. A tag appears at most once per collection or memory.
//
// The sections' framing is package ckptfile's (ckptfile.Section,
// AppendCollSections, AppendMemSections, DecodeSections); the tags, and
// which owner defines each one's bytes, are the engine's, below.
type ckptSection = ckptfile.Section

// Collection section tags.
const (
	// sectSnapshots: the snapshot catalog and ghosts (snapshot_section.go).
	sectSnapshots uint16 = 1
	// sectCompact records the generation of the collection's files
	// (compact_files.go).
	sectCompact uint16 = 2
	// sectTest is written by tests only.
	sectTest uint16 = 0xFFFF
	// sectPrunePolicy: the prune policy and its latest run
	// (prune_policy_codec.go).
	sectPrunePolicy uint16 = 3
)

// Memory section tags (they fit a byte).
const (
	// memSectHistory is the memory's recent updates (history.go).
	memSectHistory uint16 = 1
	// memSectTest is written by tests only.
	memSectTest uint16 = 0xFF
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
