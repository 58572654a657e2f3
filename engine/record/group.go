package record

import "fmt"

// GroupMemberHeader is the size of a TypeGroupMember body before its
// inner record: the type byte and the group id.
const GroupMemberHeader = 9

// GroupCommit commits group GID: its N members (N > 0) whose inner
// records' xxhash64 values add up, mod 2^64, to Sum.
type GroupCommit struct {
	GID uint64
	N   uint32
	Sum uint64
}

// EncodeGroupMember returns the body that logs rec as a member of group
// gid. REQUIRES: rec is a whole body whose type is not a group type
// (IsGroup).
func EncodeGroupMember(gid uint64, rec []byte) []byte {
	b := make([]byte, 0, GroupMemberHeader+len(rec))
	b = append(b, TypeGroupMember)
	b = le.AppendUint64(b, gid)
	return append(b, rec...)
}

// EncodeGroupCommit returns r's body.
func EncodeGroupCommit(r GroupCommit) []byte {
	b := make([]byte, 0, 21)
	b = append(b, TypeGroupCommit)
	b = le.AppendUint64(b, r.GID)
	b = le.AppendUint32(b, r.N)
	return le.AppendUint64(b, r.Sum)
}

// EncodeGroupAbort returns the body that aborts group gid.
func EncodeGroupAbort(gid uint64) []byte {
	return le.AppendUint64([]byte{TypeGroupAbort}, gid)
}

// IsGroup reports whether t is one of the group record types, which a
// member never wraps.
func IsGroup(t byte) bool {
	return t == TypeGroupMember || t == TypeGroupCommit || t == TypeGroupAbort
}

// DecodeGroupMember returns a member's group id and inner record, which
// aliases b. It refuses a member without an inner record and one whose
// inner record is a group record. REQUIRES: b[0] is TypeGroupMember.
func DecodeGroupMember(b []byte) (uint64, []byte, error) {
	if len(b) < GroupMemberHeader+1 {
		return 0, nil, fmt.Errorf("%w: short group member record", ErrBad)
	}
	inner := b[GroupMemberHeader:]
	if IsGroup(inner[0]) {
		return 0, nil, fmt.Errorf("%w: group member wraps a group record (type %d)", ErrBad, inner[0])
	}
	return le.Uint64(b[1:9]), inner, nil
}

// DecodeGroupCommit decodes a TypeGroupCommit body; a commit of no
// members is refused. REQUIRES: b[0] is TypeGroupCommit.
func DecodeGroupCommit(b []byte) (GroupCommit, error) {
	d := Decoder{B: b[1:]}
	r := GroupCommit{GID: d.U64(), N: d.U32(), Sum: d.U64()}
	if err := d.Done("group commit"); err != nil {
		return r, err
	}
	if r.N == 0 {
		return r, fmt.Errorf("%w: group commit of no members", ErrBad)
	}
	return r, nil
}

// DecodeGroupAbort decodes a TypeGroupAbort body.
// REQUIRES: b[0] is TypeGroupAbort.
func DecodeGroupAbort(b []byte) (uint64, error) {
	d := Decoder{B: b[1:]}
	gid := d.U64()
	return gid, d.Done("group abort")
}
