package server

import "strings"

// CommandKey returns the key (collection name) of a command as the
// router and the apply-time guards see it (cmd: name, then arguments),
// and whether it has one. It is the rule of keySpecOf by name alone, for
// callers outside the package that read commands back from a raft log
// (the slot mover, replica/move_delta.go): every MEM.* command's key is
// its first argument, but MEM.LIST's and MEM.CHECKPOINT's.
func CommandKey(cmd [][]byte) ([]byte, bool) {
	if len(cmd) == 0 {
		return nil, false
	}
	ks := keySpecOf(strings.ToLower(string(cmd[0])))
	if ks.first == 0 || len(cmd)-1 < ks.first {
		return nil, false
	}
	return cmd[ks.first], true
}

// DecodeExec splits a replicated transaction entry (EncodeExec's output,
// "EXEC" included) into its commands, and reports false if entry is not
// one or is malformed.
func DecodeExec(entry [][]byte) ([][][]byte, bool) {
	if len(entry) < 2 || !strings.EqualFold(string(entry[0]), execEntryName) {
		return nil, false
	}
	return decodeExec(entry[1:])
}
