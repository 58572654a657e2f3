package wal

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"github.com/memrl/memrl/vfs"
)

// RecoveryReport describes what Open found.
type RecoveryReport struct {
	// Segments is the number of segment files the log holds after Open.
	Segments int
	// FirstLSN is the LSN of the oldest retained record; it equals
	// NextLSN when the log holds no records.
	FirstLSN LSN
	// NextLSN is the LSN the next appended record will get.
	NextLSN LSN
	// Torn is non-nil when a torn tail was cut off the last segment.
	Torn *TornTail
	// Gap is non-nil when the log did not reach back to Options.From and
	// Options.AcceptGap accepted it (gap.go).
	Gap *GapError
}

// Records is the number of records the log holds.
func (r *RecoveryReport) Records() uint64 { return uint64(r.NextLSN - r.FirstLSN) }

// TornTail describes the incomplete end of the last segment that Open cut
// off: the remains of a write that was in progress when the process or
// machine stopped. Records in it were never acknowledged under
// SyncAlways.
type TornTail struct {
	File    string // path of the segment file
	Offset  int64  // where the file was cut (the file's new size)
	Dropped int64  // bytes removed
	Reason  string // why the first dropped frame was rejected
	// Removed is set when the whole file was removed because even its
	// header was incomplete (a crash while creating the segment).
	Removed bool
}

// segmentInfo names one segment file of the log.
type segmentInfo struct {
	num  uint64
	base LSN // LSN of the first record it holds or will hold
	path string
	// size is the segment's length in bytes once it is no longer active
	// (for Stats); the active segment's is Log.stats.activeBytes.
	size int64
}

// recovery is the result of scanning a log directory: what exists and
// what Open must do. Scanning changes nothing on disk.
type recovery struct {
	segments []segmentInfo // valid segments, ascending
	next     LSN           // LSN after the last valid record
	lastEnd  int64         // end of the last valid record of the last segment
	torn     *TornTail
	lastNum  uint64 // highest segment number seen (including a removed torn one)
}

// scanLog reads every segment in dir, verifying all records. It returns
// a *CorruptionError for damage that is not a torn tail of the last
// segment. It does not modify anything.
func scanLog(fs vfs.FS, dir string) (*recovery, error) {
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

	rec := &recovery{next: 1}
	for i, num := range nums {
		path := filepath.Join(dir, segmentName(num))
		last := i == len(nums)-1
		rec.lastNum = num
		if i > 0 && num != nums[i-1]+1 {
			return nil, &CorruptionError{File: path, Offset: 0,
				Reason: fmt.Sprintf("segment %d is missing (previous segment is %d)", nums[i-1]+1, nums[i-1])}
		}
		sr, state, reason, err := openSegmentReader(fs, path)
		if err != nil {
			return nil, err
		}
		if state != headerOK {
			// A segment is created, its header written and synced, and
			// only then is its name made durable. So an incomplete or
			// garbage header with nothing after it can only be the last
			// segment caught mid-creation; anything else is corruption.
			st, err := fs.Stat(path)
			if err != nil {
				return nil, err
			}
			if last && st.Size() <= segmentHeaderSize {
				rec.torn = &TornTail{File: path, Offset: 0, Dropped: st.Size(), Reason: reason, Removed: true}
				break
			}
			return nil, &CorruptionError{File: path, Offset: 0, Reason: reason}
		}
		if sr.hdr.num != num {
			sr.close()
			return nil, &CorruptionError{File: path, Offset: 0,
				Reason: fmt.Sprintf("segment header says segment %d, file name says %d", sr.hdr.num, num)}
		}
		if i > 0 && sr.hdr.base != rec.next {
			sr.close()
			return nil, &CorruptionError{File: path, Offset: 0,
				Reason: fmt.Sprintf("segment starts at LSN %d, but the previous segment ends before LSN %d", sr.hdr.base, rec.next)}
		}
		end, torn, err := scanSegment(sr, last)
		sr.close()
		if err != nil {
			return nil, err
		}
		rec.segments = append(rec.segments, segmentInfo{num: num, base: sr.hdr.base, path: path, size: end})
		rec.next = sr.next
		rec.lastEnd = end
		rec.torn = torn
	}
	return rec, nil
}

// scanSegment reads all of sr's records. It returns the end offset of the
// last valid record and, for the last segment, a torn tail if one was
// found.
func scanSegment(sr *segmentReader, last bool) (int64, *TornTail, error) {
	for {
		_, _, err := sr.read()
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) {
			return sr.off, nil, nil
		}
		var bad *badRecord
		if !errors.As(err, &bad) {
			return 0, nil, err
		}
		if !last || bad.valid {
			return 0, nil, &CorruptionError{File: sr.path, Offset: bad.off, Reason: bad.reason}
		}
		follows, err := classifyTail(sr.f, bad.off, sr.size, sr.next)
		if err != nil {
			return 0, nil, err
		}
		if follows != "" {
			return 0, nil, &CorruptionError{File: sr.path, Offset: bad.off, Reason: bad.reason + "; " + follows}
		}
		return bad.off, &TornTail{File: sr.path, Offset: bad.off, Dropped: sr.size - bad.off, Reason: bad.reason}, nil
	}
}
