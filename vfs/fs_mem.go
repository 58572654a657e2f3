package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MemFS is an in-memory FS that models what survives a power loss, for
// crash tests. It keeps durable and not-yet-durable state apart:
//
//   - File contents: bytes written (or truncations) since the file's last
//     successful Sync are unsynced; they are kept as an ordered log of
//     operations on top of the synced contents.
//   - Names: Create, Rename and Remove change what List and Open see at
//     once, but are durable only after SyncDir of their directory; until
//     then they are kept as an ordered log per directory.
//   - Directories themselves (MkdirAll, RemoveAll of a directory) are
//     durable immediately. This simplification is documented rather than
//     modelled because the engine creates its directories once, up front.
//
// Crash returns the file system a machine would see after power loss.
// FailNextSync, FailNextWrite and FailNextSyncDir inject one-shot faults.
//
// A MemFS is safe for concurrent use. Open handles keep working after the
// name they were opened under is removed or renamed (POSIX semantics).
type MemFS struct {
	mu sync.Mutex
	// dirs maps a cleaned directory path to its state. Guarded by mu.
	dirs map[string]*memDir
	// faults are pending one-shot injected faults. Guarded by mu.
	faults []memFault
	// locks holds the cleaned names locked with Lock. Guarded by mu.
	locks map[string]bool
	// ops counts mutating operations; powerOff, when > 0, is the
	// operation number from which they fail (PowerOffAt). Guarded by mu.
	ops, powerOff int64
	// syncDelay is a simulated fsync latency, in nanoseconds (atomic:
	// read without mu so that a sleeping Sync does not block others).
	syncDelay atomic.Int64
}

var _ FS = (*MemFS)(nil)

// ErrInjected is returned by MemFS operations that fail because a fault
// was injected with FailNextSync, FailNextWrite or FailNextSyncDir.
var ErrInjected = errors.New("vfs: injected fault")

// memDir is one directory. All fields are guarded by MemFS.mu.
type memDir struct {
	cur     map[string]*memNode // names as seen now
	durable map[string]*memNode // names as of the last SyncDir
	ops     []nsOp              // changes from durable to cur, in order
}

// nsOp is one atomic change of a directory's names: del is removed (if
// non-empty), then set is bound to node (if non-empty). A same-directory
// Rename is a single nsOp, so a crash sees either the old or the new name.
type nsOp struct {
	del  string
	set  string
	node *memNode
}

// memNode is a file's contents. All fields are guarded by MemFS.mu.
//
// INVARIANT: applying ops, in order, to synced yields data.
type memNode struct {
	data    []byte
	synced  []byte
	ops     []dataOp
	modTime time.Time
}

// dataOp is one unsynced change: a write of data at off, or (trunc) a
// truncation to size.
type dataOp struct {
	trunc bool
	off   int64 // write offset, or new size for trunc
	data  []byte
}

type faultKind int

const (
	faultSync faultKind = iota
	faultWrite
	faultSyncDir
)

// memFault is a one-shot fault for the next matching operation.
type memFault struct {
	kind  faultKind
	match string // substring of the file or directory name; "" matches any
}

// NewMemFS returns an empty MemFS whose root ("/" and ".") exists.
func NewMemFS() *MemFS {
	m := &MemFS{dirs: make(map[string]*memDir)}
	m.dirs["/"] = newMemDir()
	m.dirs["."] = newMemDir()
	return m
}

func newMemDir() *memDir {
	return &memDir{cur: map[string]*memNode{}, durable: map[string]*memNode{}}
}

// FailNextSync makes the next File.Sync of a file whose name contains
// match ("" = any file) fail with ErrInjected. Its unsynced data stays
// unsynced, so a later Crash may lose it, like a real failed fsync.
func (m *MemFS) FailNextSync(match string) { m.addFault(faultSync, match) }

// FailNextWrite makes the next Write or WriteAt to a file whose name
// contains match ("" = any file) fail with ErrInjected, writing nothing.
func (m *MemFS) FailNextWrite(match string) { m.addFault(faultWrite, match) }

// FailNextSyncDir makes the next SyncDir of a directory whose path
// contains match ("" = any) fail with ErrInjected, making nothing durable.
func (m *MemFS) FailNextSyncDir(match string) { m.addFault(faultSyncDir, match) }

// SetSyncDelay makes every File.Sync sleep for d first, to simulate the
// latency of a real fsync (group-commit tests need fsyncs to take time).
func (m *MemFS) SetSyncDelay(d time.Duration) { m.syncDelay.Store(int64(d)) }

func (m *MemFS) addFault(k faultKind, match string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.faults = append(m.faults, memFault{kind: k, match: match})
}

// takeFaultLocked consumes and reports the first pending fault of kind k
// matching name.
// REQUIRES: m.mu held.
func (m *MemFS) takeFaultLocked(k faultKind, name string) bool {
	for i, f := range m.faults {
		if f.kind == k && strings.Contains(name, f.match) {
			m.faults = append(m.faults[:i], m.faults[i+1:]...)
			return true
		}
	}
	return false
}

// split cleans name into its directory and base name.
func split(name string) (dir, base string) {
	name = filepath.Clean(name)
	return filepath.Dir(name), filepath.Base(name)
}

// lookupLocked returns the directory holding name and the base name.
// REQUIRES: m.mu held.
func (m *MemFS) lookupLocked(op, name string) (*memDir, string, error) {
	dir, base := split(name)
	d, ok := m.dirs[dir]
	if !ok {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	if _, isDir := m.dirs[filepath.Clean(name)]; isDir {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: errors.New("is a directory")}
	}
	return d, base, nil
}

// setLocked records an nsOp on d and applies it to d.cur.
// REQUIRES: m.mu held.
func (d *memDir) applyLocked(op nsOp) {
	if op.del != "" {
		delete(d.cur, op.del)
	}
	if op.set != "" {
		d.cur[op.set] = op.node
	}
	d.ops = append(d.ops, op)
}

// Create implements FS.
func (m *MemFS) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutateLocked("create", name); err != nil {
		return nil, err
	}
	d, base, err := m.lookupLocked("create", name)
	if err != nil {
		return nil, err
	}
	n, ok := d.cur[base]
	if ok {
		n.truncateLocked(0)
	} else {
		n = &memNode{modTime: time.Now()}
		d.applyLocked(nsOp{set: base, node: n})
	}
	return &memFile{fs: m, node: n, name: filepath.Clean(name)}, nil
}

// OpenReadWrite implements FS.
func (m *MemFS) OpenReadWrite(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.lookupLocked("open", name)
	if err != nil {
		return nil, err
	}
	n, ok := d.cur[base]
	if !ok {
		if err := m.mutateLocked("open", name); err != nil {
			return nil, err
		}
		n = &memNode{modTime: time.Now()}
		d.applyLocked(nsOp{set: base, node: n})
	}
	return &memFile{fs: m, node: n, name: filepath.Clean(name)}, nil
}

// Open implements FS.
func (m *MemFS) Open(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.lookupLocked("open", name)
	if err != nil {
		return nil, err
	}
	n, ok := d.cur[base]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{fs: m, node: n, name: filepath.Clean(name), readOnly: true}, nil
}

// Rename implements FS. Renaming within one directory is one atomic
// directory change; across directories it is two (one per directory).
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutateLocked("rename", oldname); err != nil {
		return err
	}
	od, obase, err := m.lookupLocked("rename", oldname)
	if err != nil {
		return err
	}
	nd, nbase, err := m.lookupLocked("rename", newname)
	if err != nil {
		return err
	}
	n, ok := od.cur[obase]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	if od == nd {
		if obase != nbase {
			od.applyLocked(nsOp{del: obase, set: nbase, node: n})
		}
		return nil
	}
	od.applyLocked(nsOp{del: obase})
	nd.applyLocked(nsOp{set: nbase, node: n})
	return nil
}

// Remove implements FS. Removing a file is durable after SyncDir;
// removing an (empty) directory is durable at once.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutateLocked("remove", name); err != nil {
		return err
	}
	clean := filepath.Clean(name)
	if _, ok := m.dirs[clean]; ok {
		if len(m.childrenLocked(clean)) > 0 {
			return &fs.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
		}
		delete(m.dirs, clean)
		return nil
	}
	d, base, err := m.lookupLocked("remove", name)
	if err != nil {
		return err
	}
	if _, ok := d.cur[base]; !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	d.applyLocked(nsOp{del: base})
	return nil
}

// RemoveAll implements FS. Directories removed are gone durably at once;
// a single file is removed as by Remove.
func (m *MemFS) RemoveAll(name string) error {
	m.mu.Lock()
	clean := filepath.Clean(name)
	if _, ok := m.dirs[clean]; ok {
		if err := m.mutateLocked("removeall", name); err != nil {
			m.mu.Unlock()
			return err
		}
		prefix := clean + string(filepath.Separator)
		for p := range m.dirs {
			if p == clean || strings.HasPrefix(p, prefix) {
				delete(m.dirs, p)
			}
		}
		m.mu.Unlock()
		return nil
	}
	m.mu.Unlock()
	err := m.Remove(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// MkdirAll implements FS. Directories are durable at once.
func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutateLocked("mkdir", dir); err != nil {
		return err
	}
	dir = filepath.Clean(dir)
	var chain []string
	for p := dir; ; p = filepath.Dir(p) {
		if _, ok := m.dirs[p]; ok {
			break
		}
		parent, base := filepath.Dir(p), filepath.Base(p)
		if pd, ok := m.dirs[parent]; ok {
			if _, isFile := pd.cur[base]; isFile {
				return &fs.PathError{Op: "mkdir", Path: p, Err: errors.New("not a directory")}
			}
		}
		chain = append(chain, p)
		if parent == p {
			break
		}
	}
	for _, p := range chain {
		m.dirs[p] = newMemDir()
	}
	return nil
}

// childrenLocked lists the names of dir's files and subdirectories.
// REQUIRES: m.mu held.
func (m *MemFS) childrenLocked(dir string) []string {
	var names []string
	if d, ok := m.dirs[dir]; ok {
		for n := range d.cur {
			names = append(names, n)
		}
	}
	for p := range m.dirs {
		if p != dir && filepath.Dir(p) == dir {
			names = append(names, filepath.Base(p))
		}
	}
	sort.Strings(names)
	return names
}

// List implements FS.
func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = filepath.Clean(dir)
	if _, ok := m.dirs[dir]; !ok {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: fs.ErrNotExist}
	}
	return m.childrenLocked(dir), nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	clean := filepath.Clean(name)
	if _, ok := m.dirs[clean]; ok {
		return memFileInfo{name: filepath.Base(clean), dir: true}, nil
	}
	d, base, err := m.lookupLocked("stat", name)
	if err != nil {
		return nil, err
	}
	n, ok := d.cur[base]
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return memFileInfo{name: base, size: int64(len(n.data)), modTime: n.modTime}, nil
}

// SyncDir implements FS: the directory's current names become durable.
func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = filepath.Clean(dir)
	d, ok := m.dirs[dir]
	if !ok {
		return &fs.PathError{Op: "sync", Path: dir, Err: fs.ErrNotExist}
	}
	if err := m.mutateLocked("sync", dir); err != nil {
		return err
	}
	if m.takeFaultLocked(faultSyncDir, dir) {
		return &fs.PathError{Op: "sync", Path: dir, Err: ErrInjected}
	}
	d.durable = make(map[string]*memNode, len(d.cur))
	for k, v := range d.cur {
		d.durable[k] = v
	}
	d.ops = nil
	return nil
}

// writeLocked writes p at off, extending the file with zeros if needed.
// REQUIRES: MemFS.mu held.
func (n *memNode) writeLocked(off int64, p []byte) {
	n.data = applyWrite(n.data, off, p)
	n.modTime = time.Now()
	// Coalesce an append to the previous write: a crash keeping a prefix
	// of the coalesced write is the same as keeping a prefix of the two.
	if k := len(n.ops); k > 0 && !n.ops[k-1].trunc && n.ops[k-1].off+int64(len(n.ops[k-1].data)) == off {
		n.ops[k-1].data = append(n.ops[k-1].data, p...)
		return
	}
	n.ops = append(n.ops, dataOp{off: off, data: append([]byte(nil), p...)})
}

// truncateLocked sets the file size.
// REQUIRES: MemFS.mu held.
func (n *memNode) truncateLocked(size int64) {
	n.data = applyTruncate(n.data, size)
	n.modTime = time.Now()
	n.ops = append(n.ops, dataOp{trunc: true, off: size})
}

// syncLocked makes the current contents durable.
// REQUIRES: MemFS.mu held.
func (n *memNode) syncLocked() {
	n.synced = append(n.synced[:0:0], n.data...)
	n.ops = nil
}

func applyWrite(b []byte, off int64, p []byte) []byte {
	end := off + int64(len(p))
	if end > int64(len(b)) {
		b = applyTruncate(b, end)
	}
	copy(b[off:], p)
	return b
}

func applyTruncate(b []byte, size int64) []byte {
	if size <= int64(len(b)) {
		return b[:size]
	}
	if size <= int64(cap(b)) {
		old := len(b)
		b = b[:size]
		clear(b[old:])
		return b
	}
	nb := make([]byte, size, size+size/4)
	copy(nb, b)
	return nb
}

// memFile is an open handle on a memNode.
type memFile struct {
	fs       *MemFS
	node     *memNode
	name     string
	readOnly bool
	// pos and closed are guarded by fs.mu.
	pos    int64
	closed bool
}

var _ File = (*memFile)(nil)

func (f *memFile) checkLocked(op string, write bool) error {
	if f.closed {
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	}
	if write && f.readOnly {
		return &fs.PathError{Op: op, Path: f.name, Err: errors.New("file opened read-only")}
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("read", false); err != nil {
		return 0, err
	}
	if f.pos >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[f.pos:])
	f.pos += int64(n)
	return n, nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	n, err := f.writeAtLocked(p, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.writeAtLocked(p, off)
}

// REQUIRES: f.fs.mu held.
func (f *memFile) writeAtLocked(p []byte, off int64) (int, error) {
	if err := f.checkLocked("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: fs.ErrInvalid}
	}
	if err := f.fs.mutateLocked("write", f.name); err != nil {
		return 0, err
	}
	if f.fs.takeFaultLocked(faultWrite, f.name) {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: ErrInjected}
	}
	f.node.writeLocked(off, p)
	return len(p), nil
}

func (f *memFile) Sync() error {
	if d := f.fs.syncDelay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("sync", false); err != nil {
		return err
	}
	if err := f.fs.mutateLocked("sync", f.name); err != nil {
		return err
	}
	if f.fs.takeFaultLocked(faultSync, f.name) {
		return &fs.PathError{Op: "sync", Path: f.name, Err: ErrInjected}
	}
	f.node.syncLocked()
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: fs.ErrInvalid}
	}
	if err := f.fs.mutateLocked("truncate", f.name); err != nil {
		return err
	}
	f.node.truncateLocked(size)
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("stat", false); err != nil {
		return nil, err
	}
	return memFileInfo{name: filepath.Base(f.name), size: int64(len(f.node.data)), modTime: f.node.modTime}, nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.closed = true
	return nil
}

// memFileInfo implements os.FileInfo for MemFS.
type memFileInfo struct {
	name    string
	size    int64
	dir     bool
	modTime time.Time
}

func (i memFileInfo) Name() string       { return i.name }
func (i memFileInfo) Size() int64        { return i.size }
func (i memFileInfo) ModTime() time.Time { return i.modTime }
func (i memFileInfo) IsDir() bool        { return i.dir }
func (i memFileInfo) Sys() any           { return nil }
func (i memFileInfo) Mode() os.FileMode {
	if i.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}
