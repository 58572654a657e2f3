package image

import "fmt"

// The kinds of an image's files (doc.go, "The files of a collection
// image"), in the order an image holds them.
const (
	KindMeta     uint8 = 1
	KindState    uint8 = 2
	KindVectors  uint8 = 3
	KindSums     uint8 = 4
	KindPayloads uint8 = 5
	KindSnapshot uint8 = 6
	KindIndex    uint8 = 7
)

// MetaVersion is the version of the meta file this package writes and
// reads; MetaSize is its length in bytes.
const (
	MetaVersion = 1
	MetaSize    = 1 + 8 + 4 + 4 + 8 + 8 + 8 + 8 + 4 + 1
)

// Meta is the image's meta file: the figures an importer checks the other
// files against before it trusts them.
type Meta struct {
	SrcUID           uint64 // the exporting collection's folder uid
	Dim              uint32 // the collection's dimension
	NRows            uint32 // vector rows shipped (dead rows included)
	PaySize          uint64 // payload file bytes shipped
	LegacyPayloadEnd uint64 // payload bytes below it carry no checksum
	NextID           uint64 // the collection's next memory id
	Memories         uint64 // live memories in the state file
	SnapFiles        uint32 // snapshot files that follow
	Index            bool   // an index file follows
}

// EncodeMeta returns m's MetaSize bytes.
func EncodeMeta(m Meta) []byte {
	b := make([]byte, 0, MetaSize)
	b = append(b, MetaVersion)
	b = le.AppendUint64(b, m.SrcUID)
	b = le.AppendUint32(b, m.Dim)
	b = le.AppendUint32(b, m.NRows)
	b = le.AppendUint64(b, m.PaySize)
	b = le.AppendUint64(b, m.LegacyPayloadEnd)
	b = le.AppendUint64(b, m.NextID)
	b = le.AppendUint64(b, m.Memories)
	b = le.AppendUint32(b, m.SnapFiles)
	var ix byte
	if m.Index {
		ix = 1
	}
	return append(b, ix)
}

// DecodeMeta parses a whole meta file: b must be exactly MetaSize bytes
// of version MetaVersion with an index flag of 0 or 1. The meta file has
// no checksum of its own: the image's frames and the file's close frame
// guard its bytes (doc.go), so the caller passes only bytes that the
// Reader has returned with io.EOF. Every error says what is wrong; the
// caller wraps its own sentinel around it (package engine: ErrBadImage).
// What DecodeMeta accepts is not checked against anything else (a
// dimension within the engine's bounds, the files that follow): that is
// the importer's.
func DecodeMeta(b []byte) (Meta, error) {
	if len(b) != MetaSize || b[0] != MetaVersion {
		return Meta{}, fmt.Errorf("meta of %d bytes, version %d (this build reads version %d, %d bytes)",
			len(b), firstByte(b), MetaVersion, MetaSize)
	}
	m := Meta{
		SrcUID:           le.Uint64(b[1:]),
		Dim:              le.Uint32(b[9:]),
		NRows:            le.Uint32(b[13:]),
		PaySize:          le.Uint64(b[17:]),
		LegacyPayloadEnd: le.Uint64(b[25:]),
		NextID:           le.Uint64(b[33:]),
		Memories:         le.Uint64(b[41:]),
		SnapFiles:        le.Uint32(b[49:]),
	}
	switch b[53] {
	case 0:
	case 1:
		m.Index = true
	default:
		return m, fmt.Errorf("meta: bad index flag")
	}
	return m, nil
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}
