package wal

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"github.com/memrl/memrl/vfs"
)

// Read-only inspection of log files, for tools (memrl dump wal): the
// records of a segment as recovery reads them, verified frame by frame,
// without opening the log or changing anything.

// SegmentInfo describes a segment file's header.
type SegmentInfo struct {
	Path    string
	Num     uint64 // segment number from its header
	BaseLSN LSN    // LSN of its first record
	Size    int64  // file size in bytes
}

// SegmentPaths returns the segment files of log folder dir, in log order.
func SegmentPaths(fs vfs.FS, dir string) ([]string, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	var nums []uint64
	for _, n := range names {
		if num, ok := parseSegmentName(n); ok {
			nums = append(nums, num)
		}
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	paths := make([]string, len(nums))
	for i, num := range nums {
		paths[i] = filepath.Join(dir, segmentName(num))
	}
	return paths, nil
}

// InspectSegment reads segment file path: it calls header with the
// segment's header, then rec with each record in order, its LSN and the
// offset of its frame (rec's bytes are valid only during the call). It
// stops at the first frame that fails verification, returning a
// *CorruptionError naming the offset; its Reason says whether a valid
// frame follows (damage) or not (a torn tail, which recovery would cut
// off). An error from rec stops it and is returned.
func InspectSegment(fs vfs.FS, path string, header func(SegmentInfo), rec func(lsn LSN, off int64, rec []byte) error) error {
	sr, state, reason, err := openSegmentReader(fs, path)
	if err != nil {
		return err
	}
	if state != headerOK {
		return &CorruptionError{File: path, Offset: 0, Reason: reason}
	}
	defer sr.close()
	header(SegmentInfo{Path: path, Num: sr.hdr.num, BaseLSN: sr.hdr.base, Size: sr.size})
	for {
		off := sr.off
		lsn, b, err := sr.read()
		if err == io.EOF {
			return nil
		}
		var bad *badRecord
		if errors.As(err, &bad) {
			reason := bad.reason
			if !bad.valid {
				found, cerr := classifyTail(sr.f, bad.off, sr.size, sr.next)
				switch {
				case cerr != nil:
					return cerr
				case found != "":
					reason += "; damage, not a torn tail: " + found
				default:
					reason += fmt.Sprintf("; no valid frame follows: a torn tail (recovery cuts the last segment's %d bytes from here)", sr.size-bad.off)
				}
			}
			return &CorruptionError{File: path, Offset: bad.off, Reason: reason}
		}
		if err != nil {
			return err
		}
		if err := rec(lsn, off, b); err != nil {
			return err
		}
	}
}
