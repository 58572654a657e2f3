package replica

import (
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// Batch is one raft log entry holding several commands (batch.go: the
// commands that reached the leader while its previous entries were being
// committed), applied in order as if each were an Entry of its own, all
// with the same leader clock. One entry for many commands is one raft
// append and one fsync on each replica for all of them: group commit
// through raft.
//
// Encoding (little endian), version 2 of the entry format (entry.go):
//
//	version   1 byte (BatchVersion)
//	at        8 bytes: unix nanoseconds
//	count     uvarint, 1 to MaxBatchCmds
//	count ×   a command: argc uvarint (1 to MaxEntryArgs), then argc ×
//	          (uvarint length, the bytes)
//	sum       8 bytes: xxhash64 of everything before it
//
// Version 1 entries (Entry) still decode (decodeLog): a log written
// before batching was introduced replays unchanged.
type Batch struct {
	At   int64      // unix nanoseconds of the leader's clock
	Cmds [][][]byte // each a name and its arguments
}

// BatchVersion is the version byte of an encoded Batch.
const BatchVersion = 2

// MaxBatchCmds bounds a batch's command count when decoding, so that a
// damaged count cannot make the decoder allocate without bound (the
// batcher's own limit is far lower: maxBatchCmds).
const MaxBatchCmds = 1 << 20

// EncodeBatch returns b's encoding. REQUIRES: len(b.Cmds) ≥ 1.
func EncodeBatch(b Batch) []byte {
	n := 1 + 8 + binary.MaxVarintLen64 + 8
	for _, c := range b.Cmds {
		n += cmdSize(c)
	}
	out := make([]byte, 0, n)
	out = append(out, BatchVersion)
	out = binary.LittleEndian.AppendUint64(out, uint64(b.At))
	out = binary.AppendUvarint(out, uint64(len(b.Cmds)))
	for _, c := range b.Cmds {
		out = binary.AppendUvarint(out, uint64(len(c)))
		for _, a := range c {
			out = binary.AppendUvarint(out, uint64(len(a)))
			out = append(out, a...)
		}
	}
	return binary.LittleEndian.AppendUint64(out, xxhash.Sum64(out))
}

// cmdSize bounds the bytes cmd takes in an encoded Batch.
func cmdSize(cmd [][]byte) int {
	n := binary.MaxVarintLen64
	for _, a := range cmd {
		n += binary.MaxVarintLen64 + len(a)
	}
	return n
}

// DecodeBatch decodes b (EncodeBatch's output). The arguments alias b.
func DecodeBatch(b []byte) (Batch, error) {
	if len(b) < 1+8+1+1+8 {
		return Batch{}, fmt.Errorf("%w: %d bytes", ErrBadEntry, len(b))
	}
	body, sum := b[:len(b)-8], binary.LittleEndian.Uint64(b[len(b)-8:])
	if xxhash.Sum64(body) != sum {
		return Batch{}, fmt.Errorf("%w: checksum mismatch", ErrBadEntry)
	}
	if body[0] != BatchVersion {
		return Batch{}, fmt.Errorf("%w: version %d, want %d", ErrBadEntry, body[0], BatchVersion)
	}
	out := Batch{At: int64(binary.LittleEndian.Uint64(body[1:9]))}
	rest := body[9:]
	count, k := binary.Uvarint(rest)
	// Each command takes at least two bytes (argc and one length).
	if k <= 0 || count == 0 || count > MaxBatchCmds || count > uint64(len(rest))/2 {
		return Batch{}, fmt.Errorf("%w: bad command count", ErrBadEntry)
	}
	rest = rest[k:]
	out.Cmds = make([][][]byte, count)
	for i := range out.Cmds {
		var err error
		if out.Cmds[i], rest, err = decodeCmd(rest); err != nil {
			return Batch{}, fmt.Errorf("%w (command %d of %d)", err, i, count)
		}
	}
	if len(rest) != 0 {
		return Batch{}, fmt.Errorf("%w: %d trailing bytes", ErrBadEntry, len(rest))
	}
	return out, nil
}

// decodeCmd decodes one command (argc, then each argument) from the front
// of b and returns the rest. The arguments alias b.
func decodeCmd(b []byte) (cmd [][]byte, rest []byte, err error) {
	argc, k := binary.Uvarint(b)
	if k <= 0 || argc == 0 || argc > MaxEntryArgs || argc > uint64(len(b)) {
		return nil, nil, fmt.Errorf("%w: bad argument count", ErrBadEntry)
	}
	rest = b[k:]
	cmd = make([][]byte, argc)
	for i := range cmd {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l > uint64(len(rest)-k) {
			return nil, nil, fmt.Errorf("%w: argument %d cut short", ErrBadEntry, i)
		}
		rest = rest[k:]
		cmd[i] = rest[:l:l]
		rest = rest[l:]
	}
	return cmd, rest, nil
}

// decodeLog decodes a raft log entry of either version: a Batch, or an
// Entry as a Batch of one command (single true: its reply is one []byte,
// not one per command).
func decodeLog(b []byte) (out Batch, single bool, err error) {
	if len(b) > 0 && b[0] == EntryVersion {
		e, err := DecodeEntry(b)
		if err != nil {
			return Batch{}, true, err
		}
		return Batch{At: e.At, Cmds: [][][]byte{e.Cmd}}, true, nil
	}
	out, err = DecodeBatch(b)
	return out, false, err
}
