package cluster

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The text files of this package (nodes.tsv, slots.tsv) share a frame:
// a version header line, content lines, and an optional last line
// "# sum XXXXXXXX", the CRC-32C (Castagnoli) of every byte before it.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const sumPrefix = "# sum "

// textLine is one content line of a framed file and its 1-based number.
type textLine struct {
	n    int
	text string
}

// readFramed checks data's header and, if present, its sum line, and
// returns its content lines (comments and blank lines left out). what
// names the file in errors.
func readFramed(data []byte, header, what string) ([]textLine, error) {
	body := data
	// The sum line, if any, is the last line.
	trimmed := bytes.TrimRight(data, "\n")
	if i := bytes.LastIndexByte(trimmed, '\n'); i >= 0 && bytes.HasPrefix(trimmed[i+1:], []byte(sumPrefix)) {
		want, err := strconv.ParseUint(string(trimmed[i+1+len(sumPrefix):]), 16, 32)
		if err != nil || len(trimmed)-(i+1+len(sumPrefix)) != 8 {
			return nil, fmt.Errorf("%s, line %d: bad sum line %q", what, bytes.Count(trimmed[:i+1], []byte("\n"))+1, trimmed[i+1:])
		}
		body = data[:i+1]
		if got := crc32.Checksum(body, castagnoli); got != uint32(want) {
			return nil, fmt.Errorf("%s: damaged: its checksum is %08x, its sum line says %08x", what, got, want)
		}
	}
	lines := strings.Split(string(body), "\n")
	if len(lines) == 0 || strings.TrimRight(lines[0], "\r") != header {
		return nil, fmt.Errorf("%s, line 1: want the version header %q, got %q", what, header, truncateLine(lines[0]))
	}
	var out []textLine
	for i, l := range lines[1:] {
		l = strings.TrimRight(l, "\r")
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			if strings.HasPrefix(l, sumPrefix) {
				return nil, fmt.Errorf("%s, line %d: a sum line must be the last line", what, i+2)
			}
			continue
		}
		out = append(out, textLine{n: i + 2, text: l})
	}
	return out, nil
}

// frame returns header, the content and the sum line, ready to write.
func frame(header string, content []byte) []byte {
	var b bytes.Buffer
	b.WriteString(header)
	b.WriteByte('\n')
	b.Write(content)
	fmt.Fprintf(&b, "%s%08x\n", sumPrefix, crc32.Checksum(b.Bytes(), castagnoli))
	return b.Bytes()
}

// writeFileAtomic replaces path with data so that a reader (or a crash)
// sees the old file or the new one whole: a temporary file beside it,
// fsynced, renamed over it, and the directory fsynced.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func truncateLine(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
