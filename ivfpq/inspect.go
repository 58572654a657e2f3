package ivfpq

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/memrl/memrl/vfs"
)

// FileInfo describes an index file for inspection tools (memrl dump
// index): its header, and each list's size and verdict.
type FileInfo struct {
	Version    uint32
	Size       int64 // bytes
	Params     Params
	UnitIP     bool   // an IP index over unit-norm vectors
	Rows       uint32 // vectors the lists hold
	TrainedFor uint64 // live memories the index was trained on (0 before version 2)
	MetaOff    uint64 // centroids and codebooks
	MetaLen    uint64
	DirOff     uint64 // list directory
	DataOff    uint64 // list segments
	DataLen    uint64
	ListSizes  []uint32 // vectors of each list, in list order
	// DamagedLists are the lists whose segment fails its checksum (or
	// names a row past Rows), with the file offset of each segment.
	DamagedLists []DamagedList
}

// DamagedList is a list of an index file that fails verification.
type DamagedList struct {
	List   int
	Offset uint64 // of its segment in the file
}

// Inspect reads and checks the index file at path (the same checks as
// Open, then every list's, as Verify) and describes it. On damage to the
// header, centroids or directory it returns what decoded and an error
// naming the section and its offset; damaged lists are reported in
// FileInfo, not as an error.
func Inspect(fs vfs.FS, path string) (FileInfo, error) {
	var fi FileInfo
	b, err := vfs.ReadFile(fs, path)
	if err != nil {
		return fi, err
	}
	fi.Size = int64(len(b))
	if len(b) >= 12 {
		fi.Version = binary.LittleEndian.Uint32(b[8:])
	}
	h, err := decodeHeader(b, uint64(len(b)))
	if err != nil {
		return fi, fmt.Errorf("%s: header, bytes [0, %d): %w", path, headerSize, err)
	}
	fi.Params, fi.UnitIP, fi.Rows, fi.TrainedFor = h.p, h.p.unitIP, h.rows, h.trainedFor
	fi.MetaOff, fi.MetaLen, fi.DirOff, fi.DataOff, fi.DataLen = h.metaOff, h.metaLen, h.dirOff, h.dataOff, h.dataLen
	ix, err := indexFromMapping(b, uint64(len(b)))
	if err != nil {
		return fi, fmt.Errorf("%s: centroids at byte %d, directory at byte %d or lists at byte %d: %w", path, h.metaOff, h.dirOff, h.dataOff, err)
	}
	fi.ListSizes = make([]uint32, h.p.NList)
	ix.mu.RLock() // checkList's requirement; ix is not shared
	defer ix.mu.RUnlock()
	for l := range ix.lists {
		fi.ListSizes[l] = uint32(len(ix.lists[l].base.ids))
		if ix.checkList(l) != nil {
			e, _ := getDirEntry(b[h.dirOff+uint64(l)*dirEntrySize:], h.terms16())
			fi.DamagedLists = append(fi.DamagedLists, DamagedList{List: l, Offset: h.dataOff + e.off})
		}
	}
	return fi, nil
}

// ListSummary returns the smallest, median and largest list sizes and
// how many lists are empty.
func (fi FileInfo) ListSummary() (minN, median, maxN uint32, empty int) {
	if len(fi.ListSizes) == 0 {
		return 0, 0, 0, 0
	}
	s := slices.Clone(fi.ListSizes)
	slices.Sort(s)
	for _, n := range s {
		if n == 0 {
			empty++
		}
	}
	return s[0], s[len(s)/2], s[len(s)-1], empty
}
