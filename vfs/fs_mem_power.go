package vfs

import (
	"errors"
	"io/fs"
)

// ErrPoweredOff is returned by every mutating MemFS operation from the one
// chosen with PowerOffAt on: the machine has lost power, so nothing more
// reaches the disk.
var ErrPoweredOff = errors.New("vfs: MemFS powered off (simulated crash)")

// PowerOffAt arms a simulated power loss: counting from this call, the k-th
// mutating operation (k >= 1) and every one after it fail with
// ErrPoweredOff and change nothing. k <= 0 disarms it.
//
// Mutating operations are: Create, OpenReadWrite of a missing file, Rename,
// Remove, RemoveAll, MkdirAll, SyncDir, and a File's Write, WriteAt,
// Truncate and Sync. Reads keep working.
//
// Crash tests use it to crash a workload at every k-th file operation: run
// the workload until it fails, then Crash(mode, rng) yields what the disk
// held when the power went out (nothing changed since operation k, so the
// state is the one just before it).
func (m *MemFS) PowerOffAt(k int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops = 0
	m.powerOff = max(k, 0)
}

// MutatingOps returns the number of mutating operations attempted since
// the last PowerOffAt (or since NewMemFS), including those refused because
// the power is off. A crash test runs its workload once on a fresh MemFS to
// learn how many crash points it has.
func (m *MemFS) MutatingOps() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops
}

// PoweredOff reports whether an armed power loss has happened.
func (m *MemFS) PoweredOff() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.powerOff > 0 && m.ops >= m.powerOff
}

// mutateLocked counts one mutating operation on name and refuses it once
// the power is off.
// REQUIRES: m.mu held.
func (m *MemFS) mutateLocked(op, name string) error {
	m.ops++
	if m.powerOff > 0 && m.ops >= m.powerOff {
		return &fs.PathError{Op: op, Path: name, Err: ErrPoweredOff}
	}
	return nil
}
