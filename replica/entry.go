package replica

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// Entry is one raft log entry of a replica: a command (its name, then its
// arguments, as a client sent it) and the leader's wall-clock time when it
// proposed it, which the state machine makes the engine's clock while it
// applies the command (engine.Options.Now), so that every replica stamps
// the same times and expires the same memories.
//
// Encoding (little endian):
//
//	version   1 byte (EntryVersion)
//	at        8 bytes: unix nanoseconds
//	argc      uvarint, 1 to MaxEntryArgs
//	argc ×    uvarint length, then the bytes
//	sum       8 bytes: xxhash64 of everything before it
//
// raft-boltdb does not checksum the values it stores, so the entry does:
// a damaged entry is refused (ErrBadEntry) by every replica alike rather
// than applied as a different command.
type Entry struct {
	At  int64    // unix nanoseconds of the leader's clock
	Cmd [][]byte // name and arguments
}

// EntryVersion is the version byte of an encoded Entry.
const EntryVersion = 1

// MaxEntryArgs bounds an entry's argument count when decoding, so that a
// damaged count cannot make the decoder allocate without bound (the
// server's own limit on a command's arguments is lower).
const MaxEntryArgs = 1 << 24

// ErrBadEntry reports an entry that does not decode: wrong version, cut
// short, trailing bytes or a checksum mismatch. The rule it enforces:
// only an entry exactly as its proposer encoded it is ever applied.
var ErrBadEntry = errors.New("replica: malformed or damaged log entry")

// EncodeEntry returns e's encoding.
func EncodeEntry(e Entry) []byte {
	n := 1 + 8 + binary.MaxVarintLen64 + 8
	for _, a := range e.Cmd {
		n += binary.MaxVarintLen64 + len(a)
	}
	b := make([]byte, 0, n)
	b = append(b, EntryVersion)
	b = binary.LittleEndian.AppendUint64(b, uint64(e.At))
	b = binary.AppendUvarint(b, uint64(len(e.Cmd)))
	for _, a := range e.Cmd {
		b = binary.AppendUvarint(b, uint64(len(a)))
		b = append(b, a...)
	}
	return binary.LittleEndian.AppendUint64(b, xxhash.Sum64(b))
}

// DecodeEntry decodes b (EncodeEntry's output). The arguments alias b.
func DecodeEntry(b []byte) (Entry, error) {
	if len(b) < 1+8+1+8 {
		return Entry{}, fmt.Errorf("%w: %d bytes", ErrBadEntry, len(b))
	}
	body, sum := b[:len(b)-8], binary.LittleEndian.Uint64(b[len(b)-8:])
	if xxhash.Sum64(body) != sum {
		return Entry{}, fmt.Errorf("%w: checksum mismatch", ErrBadEntry)
	}
	if body[0] != EntryVersion {
		return Entry{}, fmt.Errorf("%w: version %d, want %d", ErrBadEntry, body[0], EntryVersion)
	}
	e := Entry{At: int64(binary.LittleEndian.Uint64(body[1:9]))}
	rest := body[9:]
	argc, k := binary.Uvarint(rest)
	if k <= 0 || argc == 0 || argc > MaxEntryArgs || argc > uint64(len(rest)) {
		return Entry{}, fmt.Errorf("%w: bad argument count", ErrBadEntry)
	}
	rest = rest[k:]
	e.Cmd = make([][]byte, argc)
	for i := range e.Cmd {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l > uint64(len(rest)-k) {
			return Entry{}, fmt.Errorf("%w: argument %d cut short", ErrBadEntry, i)
		}
		rest = rest[k:]
		e.Cmd[i] = rest[:l:l]
		rest = rest[l:]
	}
	if len(rest) != 0 {
		return Entry{}, fmt.Errorf("%w: %d trailing bytes", ErrBadEntry, len(rest))
	}
	return e, nil
}
