package record

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/memrl/memrl/engine/snapfile"
)

// bodies are one encoded body of each type this package codes, with the
// decoder that reads it back.
func bodies() map[string]struct {
	b      []byte
	want   any
	decode func([]byte) (any, error)
} {
	add := Add{UID: 1, ID: 2, Row: 3, PayOff: 4, Created: 5, Q: 0.5, Payload: []byte("p"), Vec: []float32{1, 2}}
	ext := add
	ext.Attrs, ext.Key, ext.Expires = []byte(`{"a":1}`), "k", 9
	dec := func(f func([]byte) (any, error)) func([]byte) (any, error) { return f }
	rb := RollbackBatch{UID: 3, Dels: []uint64{1}, Changes: []RollbackChange{
		{Kind: RollbackRestore, Entry: snapfile.Entry{ID: 2, Q: 1.5, Visits: 3, LastReward: -1, RewardSum: 2, Updated: 5, Expires: 6, Key: "k", Attrs: []byte(`{"a":1}`)}},
		{Kind: RollbackRevive, Entry: snapfile.Entry{ID: 3, Q: 2}, Row: 4, PayOff: 5, PayLen: 6, Created: 7},
	}}
	cfg := Config{Dim: 8, Metric: 1, Alpha: 0.3, Gamma: 0.1, QInit: -1, IndexKind: 1, NList: 16, PQM: 4, PQBits: 8, TrainThreshold: 1000}
	return map[string]struct {
		b      []byte
		want   any
		decode func([]byte) (any, error)
	}{
		"drop":         {EncodeDrop(7), uint64(7), dec(func(b []byte) (any, error) { return DecodeDrop(b) })},
		"add":          {EncodeAdd(add), add, dec(func(b []byte) (any, error) { return DecodeAdd(b, 2) })},
		"add-ext":      {EncodeAdd(ext), ext, dec(func(b []byte) (any, error) { return DecodeAdd(b, 2) })},
		"delete":       {EncodeDelete(Delete{UID: 1, IDs: []uint64{2, 3}}), Delete{UID: 1, IDs: []uint64{2, 3}}, dec(func(b []byte) (any, error) { return DecodeDelete(b) })},
		"q":            {EncodeQ(Q{1, 2, 0.5, 3, -1, 2.5, 6}), Q{1, 2, 0.5, 3, -1, 2.5, 6}, dec(func(b []byte) (any, error) { return DecodeQ(b) })},
		"set-attrs":    {EncodeSetAttrs(SetAttrs{1, 2, []byte(`{}`)}), SetAttrs{1, 2, []byte(`{}`)}, dec(func(b []byte) (any, error) { return DecodeSetAttrs(b) })},
		"set-payload":  {EncodeSetPayload(SetPayload{1, 2, 3, []byte("x")}), SetPayload{1, 2, 3, []byte("x")}, dec(func(b []byte) (any, error) { return DecodeSetPayload(b) })},
		"expire":       {EncodeExpire(Expire{1, 2, 3}), Expire{1, 2, 3}, dec(func(b []byte) (any, error) { return DecodeExpire(b) })},
		"snapshot":     {EncodeSnapshot(Snapshot{1, 2, 3, 4, "s"}), Snapshot{1, 2, 3, 4, "s"}, dec(func(b []byte) (any, error) { return DecodeSnapshot(b) })},
		"delsnapshot":  {EncodeDelSnapshot(DelSnapshot{1, 2}), DelSnapshot{1, 2}, dec(func(b []byte) (any, error) { return DecodeDelSnapshot(b) })},
		"rollback":     {EncodeRollback(Rollback{1, 2, 3}), Rollback{1, 2, 3}, dec(func(b []byte) (any, error) { return DecodeRollback(b) })},
		"group-commit": {EncodeGroupCommit(GroupCommit{1, 2, 3}), GroupCommit{1, 2, 3}, dec(func(b []byte) (any, error) { return DecodeGroupCommit(b) })},
		"group-abort":  {EncodeGroupAbort(7), uint64(7), dec(func(b []byte) (any, error) { return DecodeGroupAbort(b) })},
		"replace": {EncodeReplace(Replace{UID: 1, ID: 2, Row: 3, Flags: ReplaceAttrs | ReplacePayload, Attrs: []byte(`{"a":1}`), PayOff: 4, Payload: []byte("p"), Vec: []float32{1, 2}}),
			Replace{UID: 1, ID: 2, Row: 3, Flags: ReplaceAttrs | ReplacePayload, Attrs: []byte(`{"a":1}`), PayOff: 4, Payload: []byte("p"), Vec: []float32{1, 2}},
			dec(func(b []byte) (any, error) { return DecodeReplace(b, 2) })},
		"replace-vector": {EncodeReplace(Replace{UID: 1, ID: 2, Row: 3, Vec: []float32{1, 2}}), Replace{UID: 1, ID: 2, Row: 3, Vec: []float32{1, 2}},
			dec(func(b []byte) (any, error) { return DecodeReplace(b, 2) })},
		"import": {EncodeImport(5, "c"), [2]any{uint64(5), "c"}, dec(func(b []byte) (any, error) { u, n, err := DecodeImport(b); return [2]any{u, n}, err })},
		"prune-policy-set": {EncodePrunePolicy(PrunePolicy{UID: 1, Kind: PolicySet, At: 2, Policy: Policy{Flags: PolicyOn | PolicyQBelow | PolicyFilter, QBelow: 0.5, Every: 60e9, Filter: ".a == 1"}}),
			PrunePolicy{UID: 1, Kind: PolicySet, At: 2, Policy: Policy{Flags: PolicyOn | PolicyQBelow | PolicyFilter, QBelow: 0.5, Every: 60e9, Filter: ".a == 1"}},
			dec(func(b []byte) (any, error) { return DecodePrunePolicy(b) })},
		"prune-policy-off": {EncodePrunePolicy(PrunePolicy{UID: 1, Kind: PolicySet, At: 2}), PrunePolicy{UID: 1, Kind: PolicySet, At: 2},
			dec(func(b []byte) (any, error) { return DecodePrunePolicy(b) })},
		"prune-policy-ran": {EncodePrunePolicy(PrunePolicy{UID: 1, Kind: PolicyRan, At: 2, Count: 3}), PrunePolicy{UID: 1, Kind: PolicyRan, At: 2, Count: 3},
			dec(func(b []byte) (any, error) { return DecodePrunePolicy(b) })},
		"indexed": {EncodeIndexed(Indexed{UID: 1, Fields: []string{"a", "bc"}}), Indexed{UID: 1, Fields: []string{"a", "bc"}},
			dec(func(b []byte) (any, error) { return DecodeIndexed(b) })},
		"create": {EncodeCreate(Create{UID: 1, Name: "c", Config: cfg}), Create{UID: 1, Name: "c", Config: cfg},
			dec(func(b []byte) (any, error) { return DecodeCreate(b) })},
		"create-indexed": {EncodeCreate(Create{UID: 1, Name: "c", Config: cfg, Indexed: []string{"a"}}), Create{UID: 1, Name: "c", Config: cfg, Indexed: []string{"a"}},
			dec(func(b []byte) (any, error) { return DecodeCreate(b) })},
		"rollback-batch": {EncodeRollbackBatch(rb), rb, dec(func(b []byte) (any, error) { return DecodeRollbackBatch(b) })},
		"remap":          {EncodeRemap(Remap{3, 2, 1e6, 1 << 40, 0xdead_beef}), Remap{3, 2, 1e6, 1 << 40, 0xdead_beef}, dec(func(b []byte) (any, error) { return DecodeRemap(b) })},
	}
}

// TestRoundTripAndDamage: each body decodes to what was encoded; cut at
// every length after its type byte, or with a byte added, it is refused
// with ErrBad.
func TestRoundTripAndDamage(t *testing.T) {
	for name, c := range bodies() {
		got, err := c.decode(c.b)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Fatalf("%s: decoded %+v, %v; want %+v", name, got, err, c.want)
		}
		for n := 1; n < len(c.b); n++ {
			if _, err := c.decode(c.b[:n]); !errors.Is(err, ErrBad) {
				t.Fatalf("%s cut to %d bytes: err %v", name, n, err)
			}
		}
		if _, err := c.decode(append(append([]byte(nil), c.b...), 0)); !errors.Is(err, ErrBad) {
			t.Fatalf("%s with a byte added: err %v", name, err)
		}
	}
}

// TestAddRefusals: an add of another dimension, and an extended add
// without attributes, key or expiry (not canonical), are refused.
func TestAddRefusals(t *testing.T) {
	b := EncodeAdd(Add{UID: 1, Vec: []float32{1, 2, 3}})
	if _, err := DecodeAdd(b, 2); !errors.Is(err, ErrBad) {
		t.Fatalf("3 components read as 2: err %v", err)
	}
	if r, err := DecodeAdd(b, -1); err != nil || len(r.Vec) != 3 {
		t.Fatalf("any dimension: %+v, %v", r, err)
	}
	// TypeAddExt with expires 0, an empty key, no attributes.
	plain := []byte{TypeAddExt}
	plain = le.AppendUint64(plain, 1)                   // uid
	plain = append(plain, make([]byte, 8+4+8+8+8+8)...) // id, row, payOff, created, q, expires
	plain = append(plain, make([]byte, 2+4+4)...)       // key, attrs and payload lengths
	plain = le.AppendUint32(plain, 0x3f800000)          // the vector: 1.0
	if _, err := DecodeAdd(plain, 1); !errors.Is(err, ErrBad) || !strings.Contains(err.Error(), "without attributes, key or expiry") {
		t.Fatalf("extended add with nothing extended: err %v", err)
	}
	if uid, err := AddUID(b); err != nil || uid != 1 {
		t.Fatalf("AddUID = %d, %v", uid, err)
	}
	if _, err := AddUID(b[:8]); !errors.Is(err, ErrBad) {
		t.Fatalf("AddUID of a short body: err %v", err)
	}
}

// TestDeleteCountMustMatch: a delete's count that claims more (or fewer)
// ids than its bytes hold is refused without allocating for it.
func TestDeleteCountMustMatch(t *testing.T) {
	b := EncodeDelete(Delete{UID: 1, IDs: []uint64{2}})
	le.PutUint32(b[9:], 1<<30)
	if _, err := DecodeDelete(b); !errors.Is(err, ErrBad) {
		t.Fatalf("count 2^30 over one id: err %v", err)
	}
}

// TestGroupRefusals: a group member without an inner record, or wrapping a
// group record, and a group commit of no members are refused; a member's
// inner record comes back as it went in.
func TestGroupRefusals(t *testing.T) {
	inner := EncodeDrop(5)
	gid, got, err := DecodeGroupMember(EncodeGroupMember(9, inner))
	if err != nil || gid != 9 || !reflect.DeepEqual(got, inner) {
		t.Fatalf("member: %d %v %v", gid, got, err)
	}
	for n := 1; n <= GroupMemberHeader; n++ {
		if _, _, err := DecodeGroupMember(EncodeGroupMember(9, inner)[:n]); !errors.Is(err, ErrBad) {
			t.Fatalf("member cut to %d bytes: %v", n, err)
		}
	}
	for _, g := range [][]byte{EncodeGroupMember(1, inner), EncodeGroupCommit(GroupCommit{1, 1, 0}), EncodeGroupAbort(1)} {
		if _, _, err := DecodeGroupMember(EncodeGroupMember(9, g)); !errors.Is(err, ErrBad) {
			t.Fatalf("member wrapping type %d: %v", g[0], err)
		}
	}
	if _, err := DecodeGroupCommit(EncodeGroupCommit(GroupCommit{GID: 1, N: 0, Sum: 4})); !errors.Is(err, ErrBad) {
		t.Fatalf("commit of no members: %v", err)
	}
}

// TestReplaceRefusals: a replace with an unknown flag, or a vector of
// another dimension, is refused.
func TestReplaceRefusals(t *testing.T) {
	b := EncodeReplace(Replace{UID: 1, ID: 2, Row: 3, Vec: []float32{1, 2}})
	bad := append([]byte(nil), b...)
	bad[21] = 4
	if _, err := DecodeReplace(bad, 2); !errors.Is(err, ErrBad) {
		t.Fatalf("unknown flag: %v", err)
	}
	if _, err := DecodeReplace(b, 3); !errors.Is(err, ErrBad) {
		t.Fatalf("dimension 3 asked of a vector of 2: %v", err)
	}
	if r, err := DecodeReplace(b, -1); err != nil || len(r.Vec) != 2 {
		t.Fatalf("dimension from the body: %+v, %v", r, err)
	}
}

// TestImportVersionRefused: an import record of another version is refused.
func TestImportVersionRefused(t *testing.T) {
	b := EncodeImport(5, "c")
	b[1] = ImportVersion + 1
	if _, _, err := DecodeImport(b); !errors.Is(err, ErrBad) {
		t.Fatalf("version %d: %v", ImportVersion+1, err)
	}
}

// TestPrunePolicyRefusals: an unknown kind, an unknown flag, a policy
// turned off with a field set, and filter text without the filter flag
// are refused.
func TestPrunePolicyRefusals(t *testing.T) {
	for name, r := range map[string]PrunePolicy{
		"unknown kind":        {UID: 1, Kind: 3, At: 2},
		"unknown flag":        {UID: 1, Kind: PolicySet, Policy: Policy{Flags: PolicyOn | 1<<7, Every: 1}},
		"off with a field":    {UID: 1, Kind: PolicySet, Policy: Policy{QBelow: 1}},
		"filter without flag": {UID: 1, Kind: PolicySet, Policy: Policy{Flags: PolicyOn | PolicyQBelow, Filter: "x"}},
	} {
		if _, err := DecodePrunePolicy(EncodePrunePolicy(r)); !errors.Is(err, ErrBad) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestCreateRefusals: a TypeCreateIndexed body with an empty field list is
// refused (the encoding is canonical: a create without fields is
// TypeCreate); a create's config has its fixed size.
func TestCreateRefusals(t *testing.T) {
	b := EncodeCreate(Create{UID: 1, Name: "c"})
	if b[0] != TypeCreate || len(b) != 1+8+2+1+ConfigSize {
		t.Fatalf("create without fields: type %d, %d bytes", b[0], len(b))
	}
	b = append(b, 0) // an empty field list
	b[0] = TypeCreateIndexed
	if _, err := DecodeCreate(b); !errors.Is(err, ErrBad) || !strings.Contains(err.Error(), "empty list") {
		t.Fatalf("indexed create without fields: %v", err)
	}
}

// TestRollbackBatchRefusals: a batch of no change, a delete after a
// restore, a change of unknown kind, and a count its bytes cannot hold are
// refused.
func TestRollbackBatchRefusals(t *testing.T) {
	restore := RollbackChange{Kind: RollbackRestore, Entry: snapfile.Entry{ID: 2}}
	swapped := EncodeRollbackBatch(RollbackBatch{UID: 3, Changes: []RollbackChange{restore}})
	swapped = append(swapped, RollbackDelete)
	swapped = le.AppendUint64(swapped, 9)
	le.PutUint32(swapped[9:], 2)
	unknown := EncodeRollbackBatch(RollbackBatch{UID: 3, Changes: []RollbackChange{restore}})
	unknown[13] = 3
	huge := EncodeRollbackBatch(RollbackBatch{UID: 3, Dels: []uint64{1}})
	le.PutUint32(huge[9:], 1<<30)
	for name, b := range map[string][]byte{
		"empty":                EncodeRollbackBatch(RollbackBatch{UID: 3}),
		"delete after restore": swapped,
		"unknown kind":         unknown,
		"count past the bytes": huge,
	} {
		if _, err := DecodeRollbackBatch(b); !errors.Is(err, ErrBad) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
