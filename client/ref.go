package client

import "strconv"

// Ref names one memory of a collection: by its id (ID) or by its key
// (Key), as the protocol's `ref` (`id | KEY k`). The zero Ref is id 0.
type Ref struct {
	id    int64
	key   string
	isKey bool
}

// ID names the memory with id id. Ids are 0 to 2^63-1.
func ID(id int64) Ref { return Ref{id: id} }

// Key names the memory with key k. Keys are 1 to 512 bytes, any bytes;
// the server refuses others with ErrBadKey.
func Key(k string) Ref { return Ref{key: k, isKey: true} }

// IDs names the memories with the given ids, in order.
func IDs(ids ...int64) []Ref {
	r := make([]Ref, len(ids))
	for i, id := range ids {
		r[i] = ID(id)
	}
	return r
}

// Keys names the memories with the given keys, in order.
func Keys(keys ...string) []Ref {
	r := make([]Ref, len(keys))
	for i, k := range keys {
		r[i] = Key(k)
	}
	return r
}

// IsKey reports whether r names a memory by its key.
func (r Ref) IsKey() bool { return r.isKey }

// String returns the id in decimal, or `KEY "k"`.
func (r Ref) String() string {
	if r.isKey {
		return "KEY " + strconv.Quote(r.key)
	}
	return strconv.FormatInt(r.id, 10)
}

// appendArgs appends r as command arguments: the id, or "KEY" and the key.
func (r Ref) appendArgs(args []any) []any {
	if r.isKey {
		return append(args, "KEY", r.key)
	}
	return append(args, r.id)
}
