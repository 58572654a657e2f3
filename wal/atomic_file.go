package wal

import (
	"io"
	"path/filepath"
	"time"
)

// atomicTempSuffix names the temporary file WriteFileAtomic writes first.
// A leftover one (from a crash) is harmless and is overwritten next time.
const atomicTempSuffix = ".tmp"

// bytesPerSync is how much WriteFileAtomic writes between fsyncs.
const bytesPerSync = 1 << 20

// WriteFileAtomic replaces the file at path with data such that, after a
// crash at any point, path holds either its old contents or data, never a
// mix, and once it returns nil the new contents are durable.
//
// It writes path+".tmp", fsyncs it, renames it over path, and fsyncs the
// directory. (Without the first fsync, a crash after the rename could
// leave path naming a file whose data never reached the disk.)
//
// A large file is written and fsynced bytesPerSync at a time, pausing after
// each fsync for as long as it took, so that the disk never holds more than
// that of its dirty data at once and is left idle half the time: a single
// fsync of tens of megabytes makes every other fsync on the file system
// (the WAL's, which writers wait for) queue behind it.
func WriteFileAtomic(fs FS, path string, data []byte) error {
	tmp := path + atomicTempSuffix
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	for len(data) > 0 {
		n := min(len(data), bytesPerSync)
		if _, err := f.Write(data[:n]); err != nil {
			f.Close()
			fs.Remove(tmp)
			return err
		}
		data = data[n:]
		if len(data) == 0 {
			break
		}
		t := time.Now()
		if err := f.Sync(); err != nil {
			f.Close()
			fs.Remove(tmp)
			return err
		}
		time.Sleep(time.Since(t))
	}
	if err := f.Sync(); err != nil {
		f.Close()
		fs.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		fs.Remove(tmp)
		return err
	}
	if err := fs.Rename(tmp, path); err != nil {
		fs.Remove(tmp)
		return err
	}
	return fs.SyncDir(filepath.Dir(path))
}

// ReadFile returns the contents of the file at path.
func ReadFile(fs FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, st.Size())
	n, err := io.ReadFull(f, buf)
	if err == io.ErrUnexpectedEOF {
		// The file shrank since Stat; return what is there.
		return buf[:n], nil
	}
	if err != nil {
		return nil, err
	}
	// Read any bytes appended since Stat.
	rest, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	return append(buf, rest...), nil
}
