package ivfpq

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// On-disk format, versions 2, 3 and 4 (Open also reads version 1). See
// doc.go for the drawing. All integers are little-endian; all checksums are
// xxhash64.

// FileName is the name of the index file inside the directory given to Save
// and Open.
const FileName = "ivfpq.idx"

const (
	fileMagic   = "MEMRLIVF"
	fileVersion = 2
	// fileVersionUnequal is version 2's layout for an index whose M does
	// not divide Dim, so that its sub-spaces are of two widths (params.go).
	// Save writes it for such indexes and only for them, so files of
	// equal-width indexes stay readable by builds that predate it, while a
	// build that predates it refuses an unequal one as an unknown version
	// (ErrVersion) rather than as damage. INVARIANT (checked by Open): a
	// file is version 3 exactly when its M does not divide its Dim.
	fileVersionUnequal = 3
	// fileVersionTerms16 is the layout of indexes with L2 terms
	// (Params.hasTerms), whatever their sub-space widths: each list's terms
	// are stored as [n]uint16 fixed point, term ≈ base + t·step, with the
	// list's base and step in its directory entry (bytes [24, 32), reserved
	// in earlier versions), which halves the terms' share of the file and
	// of the mapped index. Save writes it for, and only for, indexes with
	// terms; indexes without keep writing version 2 or 3, byte for byte as
	// before. INVARIANT (checked by Open): a version 4 file's index has
	// terms; the version 3 rule (M not dividing Dim) holds for versions 1
	// to 3 only. A build that predates it refuses it as ErrVersion.
	fileVersionTerms16 = 4
	// fileVersionV1 is the format before the training size was recorded:
	// the same layout, with bytes [100, 120) all zero. Open reads it with
	// TrainedFor 0; Save never writes it.
	fileVersionV1 = 1
	headerSize    = 128
	headerSumOff  = 120
	dirEntrySize  = 32

	// flagUnitIP marks an IP index over unit-norm vectors (Params.unitIP).
	flagUnitIP = 1 << 0
)

// header is the decoded fixed-size file header.
type header struct {
	p Params
	// version is the format version: decoded from the file, or chosen by
	// Save (fileVersionFor) before encode.
	version uint32
	rows    uint32
	metaOff uint64
	metaLen uint64
	dirOff  uint64
	dataOff uint64
	dataLen uint64
	metaSum uint64
	dirSum  uint64
	// trainedFor is Index.trainedFor (version 2; 0 in version 1 files).
	trainedFor uint64
}

func pad8(n uint64) uint64 { return (n + 7) &^ 7 }

// metaLenFor is the byte length of the coarse centroids plus the codebooks.
func metaLenFor(p Params) uint64 {
	return 4 * uint64(p.NList*p.Dim+p.bookLen())
}

// codesLenFor is the byte length of n vectors' codes.
func codesLenFor(p Params, n int) int {
	if p.Bits == 8 {
		return n * p.M
	}
	return codes4Len(n, p.M)
}

// fileVersionFor is the version Save writes for p: 4 when the index has
// L2 terms and terms16 is set (always, outside tests that write the older
// layout), else 3 when M does not divide Dim, else 2.
func fileVersionFor(p Params, terms16 bool) uint32 {
	switch {
	case terms16 && p.hasTerms():
		return fileVersionTerms16
	case p.wideSubs() != 0:
		return fileVersionUnequal
	}
	return fileVersion
}

// termsLenFor is the byte length of n vectors' L2 terms: 2 bytes each in
// the 16-bit form (format version 4), 4 as float32.
func termsLenFor(p Params, n int, terms16 bool) int {
	switch {
	case !p.hasTerms():
		return 0
	case terms16:
		return 2 * n
	}
	return 4 * n
}

// segLenFor is the on-disk length of a list of n vectors: ids, codes and
// terms (16-bit when terms16), each padded to 8 bytes.
func segLenFor(p Params, n int, terms16 bool) uint64 {
	return pad8(4*uint64(n)) + pad8(uint64(codesLenFor(p, n))) + pad8(uint64(termsLenFor(p, n, terms16)))
}

// terms16 reports whether the file stores 16-bit terms (version 4).
func (h *header) terms16() bool { return h.version == fileVersionTerms16 }

func (h *header) encode() []byte {
	b := make([]byte, headerSize)
	le := binary.LittleEndian
	copy(b[0:8], fileMagic)
	le.PutUint32(b[8:], h.version)
	le.PutUint32(b[12:], headerSize)
	le.PutUint32(b[16:], uint32(h.p.Dim))
	le.PutUint32(b[20:], uint32(h.p.NList))
	le.PutUint32(b[24:], uint32(h.p.M))
	le.PutUint32(b[28:], uint32(h.p.Bits))
	le.PutUint32(b[32:], uint32(h.p.Metric))
	le.PutUint32(b[36:], h.rows)
	le.PutUint64(b[40:], h.metaOff)
	le.PutUint64(b[48:], h.metaLen)
	le.PutUint64(b[56:], h.dirOff)
	le.PutUint64(b[64:], h.dataOff)
	le.PutUint64(b[72:], h.dataLen)
	le.PutUint64(b[80:], h.metaSum)
	le.PutUint64(b[88:], h.dirSum)
	var flags uint32
	if h.p.unitIP {
		flags |= flagUnitIP
	}
	le.PutUint32(b[96:], flags)
	le.PutUint64(b[100:], h.trainedFor)
	le.PutUint64(b[headerSumOff:], xxhash.Sum64(b[:headerSumOff]))
	return b
}

// checkMagic returns a notIndexFile error unless b, the file's first
// bytes, starts with the magic or is a prefix of it (a file cut inside the
// magic is a damaged index, and the length checks say so).
func checkMagic(b []byte) error {
	n := min(len(b), len(fileMagic))
	if string(b[:n]) != fileMagic[:n] {
		return notIndexFile{start: string(b[:n])}
	}
	return nil
}

// notIndexFile is the error of a file without the magic. It matches
// ErrNotIndexFile and ErrCorrupt (see ErrNotIndexFile), and its text says
// only the former.
type notIndexFile struct{ start string }

func (e notIndexFile) Error() string {
	return fmt.Sprintf("%v: it starts with %q, not %q", ErrNotIndexFile, e.start, fileMagic)
}

func (e notIndexFile) Unwrap() []error { return []error{ErrNotIndexFile, ErrCorrupt} }

// decodeHeader parses and checks the header against the file size. It
// checks everything that can be checked without reading past the header.
func decodeHeader(b []byte, fileSize uint64) (header, error) {
	var h header
	if err := checkMagic(b); err != nil {
		return h, err
	}
	if len(b) < headerSize {
		return h, fmt.Errorf("%w: file is %d bytes, shorter than the %d-byte header", ErrCorrupt, len(b), headerSize)
	}
	le := binary.LittleEndian
	if got, want := le.Uint64(b[headerSumOff:]), xxhash.Sum64(b[:headerSumOff]); got != want {
		return h, fmt.Errorf("%w: header checksum %016x, computed %016x", ErrCorrupt, got, want)
	}
	version := le.Uint32(b[8:])
	if version < fileVersionV1 || version > fileVersionTerms16 {
		return h, fmt.Errorf("%w: version %d, this build reads %d to %d", ErrVersion, version, fileVersionV1, fileVersionTerms16)
	}
	h.version = version
	if hs := le.Uint32(b[12:]); hs != headerSize {
		return h, fmt.Errorf("%w: header size %d", ErrCorrupt, hs)
	}
	h.p = Params{
		Dim: int(le.Uint32(b[16:])), NList: int(le.Uint32(b[20:])), M: int(le.Uint32(b[24:])),
		Bits: int(le.Uint32(b[28:])), Metric: Metric(le.Uint32(b[32:])),
	}
	if err := h.p.Validate(); err != nil {
		return h, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if unequal := h.p.wideSubs() != 0; version != fileVersionTerms16 && unequal != (version == fileVersionUnequal) {
		return h, fmt.Errorf("%w: version %d file with M %d and Dim %d (version %d is for, and only for, M not dividing Dim)",
			ErrCorrupt, version, h.p.M, h.p.Dim, fileVersionUnequal)
	}
	switch flags := le.Uint32(b[96:]); {
	case flags&^flagUnitIP != 0:
		return h, fmt.Errorf("%w: unknown header flags %#x", ErrCorrupt, flags)
	case flags&flagUnitIP != 0 && h.p.Metric != IP:
		return h, fmt.Errorf("%w: unit-norm IP flag on a %v index", ErrCorrupt, h.p.Metric)
	default:
		h.p.unitIP = flags&flagUnitIP != 0
	}
	if version == fileVersionTerms16 && !h.p.hasTerms() {
		return h, fmt.Errorf("%w: version %d file of a %v index without L2 terms (version %d is for, and only for, indexes with terms)",
			ErrCorrupt, version, h.p.Metric, fileVersionTerms16)
	}
	// Reserved bytes must be zero: a writer that set them meant something
	// this reader would ignore. Version 1 reserved [100, 120) as well.
	reservedFrom := 108
	if version == fileVersionV1 {
		reservedFrom = 100
	}
	for _, x := range b[reservedFrom:headerSumOff] {
		if x != 0 {
			return h, fmt.Errorf("%w: reserved header bytes [%d, %d) are not zero", ErrCorrupt, reservedFrom, headerSumOff)
		}
	}
	if version != fileVersionV1 {
		h.trainedFor = le.Uint64(b[100:])
	}
	h.rows = le.Uint32(b[36:])
	h.metaOff, h.metaLen = le.Uint64(b[40:]), le.Uint64(b[48:])
	h.dirOff, h.dataOff, h.dataLen = le.Uint64(b[56:]), le.Uint64(b[64:]), le.Uint64(b[72:])
	h.metaSum, h.dirSum = le.Uint64(b[80:]), le.Uint64(b[88:])
	switch {
	case h.metaOff != headerSize:
		return h, fmt.Errorf("%w: meta offset %d", ErrCorrupt, h.metaOff)
	case h.metaLen != metaLenFor(h.p):
		return h, fmt.Errorf("%w: meta length %d, params need %d", ErrCorrupt, h.metaLen, metaLenFor(h.p))
	case h.dirOff != pad8(h.metaOff+h.metaLen):
		return h, fmt.Errorf("%w: directory offset %d", ErrCorrupt, h.dirOff)
	case h.dataOff != h.dirOff+uint64(h.p.NList)*dirEntrySize:
		return h, fmt.Errorf("%w: data offset %d", ErrCorrupt, h.dataOff)
	case h.dataLen > math.MaxInt64-h.dataOff || h.dataOff+h.dataLen != fileSize:
		return h, fmt.Errorf("%w: data section [%d,+%d) does not end the %d-byte file", ErrCorrupt, h.dataOff, h.dataLen, fileSize)
	}
	return h, nil
}

// dirEntry locates one list's segment inside the data section.
type dirEntry struct {
	off uint64 // from the start of the data section; multiple of 8
	n   uint32 // vectors
	sum uint64 // xxhash64 of the segment's segLenFor(n) bytes
	// grid is the list's 16-bit term grid (version 4, bytes [24, 28) base
	// and [28, 32) step); zero, and those bytes zero, in other versions.
	grid termGrid
}

func (e dirEntry) put(b []byte) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], e.off)
	le.PutUint32(b[8:], e.n)
	le.PutUint32(b[12:], 0)
	le.PutUint64(b[16:], e.sum)
	le.PutUint32(b[24:], math.Float32bits(e.grid.base))
	le.PutUint32(b[28:], math.Float32bits(e.grid.step))
}

// getDirEntry decodes a directory entry; ok is false when its reserved
// bytes are not zero: [12, 16) always, and [24, 32) unless terms16 (a
// version 4 file), where they hold the term grid (not checked here:
// termGrid.valid).
func getDirEntry(b []byte, terms16 bool) (e dirEntry, ok bool) {
	le := binary.LittleEndian
	e = dirEntry{off: le.Uint64(b[0:]), n: le.Uint32(b[8:]), sum: le.Uint64(b[16:])}
	if terms16 {
		e.grid = termGrid{base: math.Float32frombits(le.Uint32(b[24:])), step: math.Float32frombits(le.Uint32(b[28:]))}
		return e, le.Uint32(b[12:]) == 0
	}
	return e, le.Uint32(b[12:]) == 0 && le.Uint64(b[24:]) == 0
}

// littleEndian reports whether the host stores integers little-endian, in
// which case row ids are read from the mapping in place.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// idsView returns n little-endian uint32s at b as a []uint32: a view into
// b on little-endian hosts (b must be 4-byte aligned, which the format's
// 8-byte alignment and mmap's page alignment give), a decoded copy otherwise.
func idsView(b []byte, n int) []uint32 {
	if n == 0 {
		return nil
	}
	if littleEndian {
		return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

// uint16sView returns n little-endian uint16s at b, as idsView does (b
// must be 2-byte aligned).
func uint16sView(b []byte, n int) []uint16 {
	if n == 0 {
		return nil
	}
	if littleEndian {
		return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]uint16, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return out
}

// floatsView returns n little-endian float32s at b, as idsView does.
func floatsView(b []byte, n int) []float32 {
	if n == 0 {
		return nil
	}
	if littleEndian {
		return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
	}
	return floatsFrom(b, n)
}

// floatsFrom decodes n little-endian float32s.
func floatsFrom(b []byte, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// appendFloats appends v little-endian.
func appendFloats(b []byte, v []float32) []byte {
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// appendUint16s appends v little-endian.
func appendUint16s(b []byte, v []uint16) []byte {
	for _, x := range v {
		b = binary.LittleEndian.AppendUint16(b, x)
	}
	return b
}
