package engine

import (
	"testing"

	"github.com/memrl/memrl/engine/record"
)

// TestRecordTypesRegistered: every record type the engine logs has the
// number package record lists for it, so that no number is given twice.
func TestRecordTypesRegistered(t *testing.T) {
	for _, p := range []struct {
		name          string
		engine, table byte
	}{
		{"create", recCreate, record.TypeCreate},
		{"drop", recDrop, record.TypeDrop},
		{"add", recAdd, record.TypeAdd},
		{"delete", recDelete, record.TypeDelete},
		{"q", recQ, record.TypeQ},
		{"add-ext", recAddExt, record.TypeAddExt},
		{"set-attrs", recSetAttrs, record.TypeSetAttrs},
		{"set-payload", recSetPayload, record.TypeSetPayload},
		{"expire", recExpire, record.TypeExpire},
		{"indexed", recIndexed, record.TypeIndexed},
		{"create-indexed", recCreateIndexed, record.TypeCreateIndexed},
		{"snapshot", recSnapshot, record.TypeSnapshot},
		{"delsnapshot", recDelSnapshot, record.TypeDelSnapshot},
		{"rollback", recRollback, record.TypeRollback},
		{"prune-policy", recPrunePolicy, record.TypePrunePolicy},
		{"rollback-batch", recRollbackBatch, record.TypeRollbackBatch},
		{"group-member", recGroupMember, record.TypeGroupMember},
		{"group-commit", recGroupCommit, record.TypeGroupCommit},
		{"group-abort", recGroupAbort, record.TypeGroupAbort},
		{"remap", recRemap, record.TypeRemap},
		{"replace", recReplace, record.TypeReplace},
		{"import", recImport, record.TypeImport},
	} {
		if p.engine != p.table {
			t.Errorf("%s: the engine logs type %d, package record lists %d", p.name, p.engine, p.table)
		}
	}
}
