package engine

import "unsafe"

// File writes of a batch of adds. Written one memory at a time, each
// costs a write to the vector file, one to the checksum file and one to
// the payload file: 55% of the CPU time of a batch of 1000 128-d memories
// (BenchmarkAddBatch). A batch writes each file in chunks of up to
// batchWriteChunk bytes instead, which cut the CPU time (user+sys) of 300
// such batches from 2.3-2.5 s to 0.9-1.1 s.

// batchWriteChunk bounds the buffer a batch's file writes assemble, so a
// large batch costs a few more writes rather than another copy of itself.
const batchWriteChunk = 1 << 20

// placeLocked gives recs consecutive rows from the vector file's end and
// consecutive payload offsets from the payload file's end.
// REQUIRES: c.mu held for writing.
func (c *Collection) placeLocked(recs []addRec) {
	off := c.pays.size
	for i := range recs {
		recs[i].Row = c.vecs.nrows + uint32(i)
		recs[i].PayOff = off
		off += c.pays.recordSize(off, len(recs[i].Payload))
	}
}

// writeBatchFilesLocked writes the vector rows, their checksums and the
// payload records of recs, placed by placeLocked. On failure some may be
// written: the caller forgets them with unwriteFilesLocked(recs[0]).
// REQUIRES: c.mu held for writing.
func (c *Collection) writeBatchFilesLocked(recs []addRec) error {
	rows := make([][]float32, 0, min(len(recs), batchWriteChunk/int(c.vecs.rowSize)+1))
	first := 0
	for i := range recs {
		rows = append(rows, recs[i].Vec)
		if len(rows)*int(c.vecs.rowSize) >= batchWriteChunk || i == len(recs)-1 {
			if err := c.vecs.putRows(recs[first].Row, rows); err != nil {
				return err
			}
			rows, first = rows[:0], i+1
		}
	}
	var buf []byte
	start := recs[0].PayOff
	for i := range recs {
		r := &recs[i]
		buf = c.pays.appendRecord(buf, r.ID, r.PayOff, r.Payload)
		if len(buf) >= batchWriteChunk || i == len(recs)-1 {
			if err := c.pays.putRecords(start, buf); err != nil {
				return err
			}
			buf, start = buf[:0], r.PayOff+c.pays.recordSize(r.PayOff, len(r.Payload))
		}
	}
	return nil
}

// putRows writes vs as rows first, first+1, … with one write to the vector
// file and one to the checksum file, growing the file as needed.
func (s *vectorStore) putRows(first uint32, vs [][]float32) error {
	if len(vs) == 0 {
		return nil
	}
	cf, err := s.files.acquire(s.path)
	if err != nil {
		return err
	}
	defer s.files.release(cf)
	end := first + uint32(len(vs))
	if end > s.capRows {
		if err := s.grow(cf.f, end); err != nil {
			return err
		}
	}
	if err := s.reserve(end); err != nil {
		return err
	}
	buf := make([]byte, 0, len(vs)*int(s.rowSize))
	sums := make([]uint64, len(vs))
	for i, v := range vs {
		buf = append(buf, unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), s.rowSize)...)
		sums[i] = rowSum(first+uint32(i), v)
	}
	if _, err := cf.f.WriteAt(buf, int64(first)*s.rowSize); err != nil {
		return err
	}
	if err := s.putSums(first, sums); err != nil {
		return err
	}
	if s.resident {
		copy(s.mem.b[int64(first)*s.rowSize:], buf)
	}
	s.nrows = max(s.nrows, end)
	return nil
}

// putSums records the checksums of rows first, first+1, … in memory and,
// unless the store is legacy, in the checksum file with one write.
func (s *vectorStore) putSums(first uint32, sums []uint64) error {
	if !s.legacy {
		cf, err := s.files.acquire(s.sumsPath)
		if err != nil {
			return err
		}
		b := make([]byte, 0, 8*len(sums))
		for _, x := range sums {
			b = le.AppendUint64(b, x)
		}
		_, err = cf.f.WriteAt(b, sumsOffset(first))
		s.files.release(cf)
		if err != nil {
			return err
		}
	}
	for uint32(len(s.sums)) < first+uint32(len(sums)) {
		s.sums = append(s.sums, 0)
	}
	copy(s.sums[first:], sums)
	return nil
}

// recordSize returns the bytes of the record of an n-byte payload at off:
// the payload, then its checksum unless off is in the legacy part.
func (s *payloadStore) recordSize(off uint64, n int) uint64 {
	if s.checked(off) {
		return uint64(n) + payloadSumSize
	}
	return uint64(n)
}

// appendRecord appends the record of memory id's payload p, to be written
// at off, to dst (see put).
func (s *payloadStore) appendRecord(dst []byte, id, off uint64, p []byte) []byte {
	dst = append(dst, p...)
	if s.checked(off) {
		dst = le.AppendUint64(dst, payloadSum(id, off, p))
	}
	return dst
}

// putRecords writes buf, consecutive payload records made by appendRecord,
// at off, and extends size past them.
func (s *payloadStore) putRecords(off uint64, buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	cf, err := s.files.acquire(s.path)
	if err != nil {
		return err
	}
	defer s.files.release(cf)
	if _, err := cf.f.WriteAt(buf, int64(off)); err != nil {
		return err
	}
	s.size = max(s.size, off+uint64(len(buf)))
	return nil
}
