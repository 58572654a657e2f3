// Package record is the format of the bodies of the engine's log records:
// the type numbers of every record, and the codec of every body (creates
// with their config's layout, indexed fields, adds, deletes, Q updates,
// attribute, payload and expiry updates, drops, snapshots, rollbacks and
// their batches, prune policies and the policy's layout, groups, vector
// replacements, compaction's remap marker, imports). The WAL (package
// wal) frames and checksums each body; this package defines the bytes
// inside. It needs nothing of the engine: a rollback batch's entries are
// package engine/snapfile's, which it imports.
//
// # Layouts
//
// Every body starts with its one-byte type (the Type constants); a change
// of a body's layout gets a new type number, so old logs stay readable.
// All integers are little-endian; times are unix nanoseconds.
//
//	TypeCreate       uid u64 | name u16-len bytes | config
//	TypeCreateIndexed  TypeCreate's body | fields   (fields not empty)
//	config:          dim u32 | metric u8 | alpha f64 | gamma f64 | qinit f64 |
//	                 index kind u8 | nlist u32 | pqm u32 | pqbits u8 | train u32
//	                 (ConfigSize bytes; a checkpoint's collection carries the same)
//	TypeIndexed      uid u64 | fields                (the whole list after a change)
//	fields:          n u8 | n × (name u8-len bytes)  (a checkpoint's collection carries
//	                 the same list after its config, version 5 on)
//	TypeDrop         uid u64
//	TypeAdd          uid u64 | id u64 | row u32 | payOff u64 | created i64 | q f64 |
//	                 payload u32-len bytes | vector dim×f32
//	TypeAddExt       uid u64 | id u64 | row u32 | payOff u64 | created i64 | q f64 |
//	                 expires i64 | key u16-len bytes | attrs u32-len bytes |
//	                 payload u32-len bytes | vector dim×f32
//	TypeDelete       uid u64 | n u32 | n × id u64
//	TypeQ            uid u64 | id u64 | q f64 | visits u64 | lastReward f64 | rewardSum f64 | updated i64
//	TypeSetAttrs     uid u64 | id u64 | attrs u32-len bytes          (empty: none)
//	TypeSetPayload   uid u64 | id u64 | payOff u64 | payload u32-len bytes
//	TypeExpire       uid u64 | id u64 | expires i64                  (0: never)
//	TypeSnapshot     uid u64 | seq u64 | created i64 | count u64 | name u16-len bytes
//	TypeDelSnapshot  uid u64 | seq u64
//	TypeRollback     uid u64 | seq u64 | n u64    (commits the n changes of the batches before it)
//	TypeRollbackBatch  uid u64 | n u32 | n × change (n > 0; deletes before the rest)
//	change:          kind u8 | id u64 | then, for RollbackRestore and RollbackRevive:
//	                 the rest of a snapshot entry (package engine/snapfile: q f64 |
//	                 visits u64 | lastReward f64 | rewardSum f64 | updated i64 |
//	                 expires i64 | key u16-len bytes | attrs u32-len bytes) |
//	                 and for RollbackRevive only: row u32 | payOff u64 | payLen u32 | created i64
//	TypeReplace      uid u64 | id u64 | row u32 | flags u8 |
//	                 [attrs u32-len bytes]                 (flags&ReplaceAttrs)
//	                 [payOff u64 | payload u32-len bytes]  (flags&ReplacePayload)
//	                 vector dim×f32
//	TypeGroupMember  gid u64 | inner body (of any type but the three group types)
//	TypeGroupCommit  gid u64 | count u32 | sum u64   (count > 0; sum = Σ xxhash64(inner) mod 2^64)
//	TypeGroupAbort   gid u64
//	TypePrunePolicy  uid u64 | kind u8 | at i64 | kind PolicySet: policy
//	                                           | kind PolicyRan: count u64
//	policy:          flags u8 | qBelow f64 | minVisits u64 | older i64 | idle i64 |
//	                 maxCount u64 | every i64 | filter u16-len bytes
//	                 (flags: Policy* bits; without PolicyOn, no policy and all zero;
//	                 the engine's checkpoint prune section carries the same policy)
//	TypeImport       version u8 = 1 | uid u64 | name u16-len bytes
//	TypeRemap        uid u64 | gen u64 | nrows u32 | paySize u64 | mapSum u64
//	                 (records after it refer to generation gen's rows; mapSum is the
//	                 xxhash64 of gen's row map file, package engine/remapfile)
//
// An add with attributes, a key or an expiry is TypeAddExt; one with none
// of them is TypeAdd, whose layout never changes, and a TypeAddExt body
// without any of them is refused (the encoding is canonical). The
// vector's dimension is not in the body: the reader passes the
// collection's (AddUID reads the collection first).
//
// Records log results, not operations: TypeQ carries the new Q and
// counters, TypeAdd the row and payload offset chosen, an expiry is
// absolute (never a TTL), so that replaying a record twice (once from a
// checkpoint's state, once from the log) changes nothing, at any later
// time.
//
// # What a reader refuses
//
// Every decoder refuses, with an error wrapping ErrBad, a body cut short,
// one with bytes past its last field, a delete whose count does not match
// its bytes, an add or a replace whose vector is not of the dimension asked
// for, a TypeCreateIndexed with an empty field list, a TypeAddExt without
// attributes, key or expiry, a rollback batch of no change, with a change
// of unknown kind or a delete after a restore, a replace with unknown
// flags, a prune policy record of unknown kind or flags (or turned off
// with a field set, or with filter text without its flag), an import of
// another version, a group member without an inner body or wrapping a group
// record, and a group commit of no members. Length fields are never trusted
// for an allocation: a decoder allocates no more than the body's size. The
// WAL's checksum has accepted the bytes, so a refusal means a bug or a log
// written by a newer version. The values of a prune policy (its criteria,
// its filter's parse) are the engine's to check, as it checks a policy it is
// given, and so are a create's config (the engine's Config.Validate) and
// the names of a field list (valid, sorted and unique).
package record
