package server

import (
	"bytes"
	"io"
	"unsafe"
)

const (
	// readBufSize is the initial (and usual) size of a Reader's input
	// buffer. The buffer only grows beyond it to hold one long inline line.
	readBufSize = 16 << 10
	// maxHeaderLen bounds a "*<n>" or "$<n>" line including "\r\n". Any
	// valid count fits ("$" + 19 digits + CRLF); longer lines are rejected
	// before more input is read.
	maxHeaderLen = 32
	// firstChunk is how much arena space is reserved before reading a bulk
	// string whose bytes are not yet buffered. Later reservations grow with
	// the bytes actually received, so a tiny input that declares a huge
	// length cannot make the reader allocate that length up front.
	firstChunk = 64 << 10
	// keepArena and keepArgs bound the memory a Reader retains between
	// commands; after an unusually large command the buffers are dropped
	// instead of being reused. Retained bytes stay reserved from the
	// Reader's Budget, so keepArena is kept small: 10,000 idle clients
	// retain at most 640 MiB.
	keepArena = 64 << 10
	keepArgs  = 4096
)

// Reader reads client requests in RESP2 form: either an array of bulk
// strings ("*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n") or an inline command line
// ("ECHO hi\r\n", "ECHO hi\n", with Redis's quoting rules; see splitInline).
//
// A Reader is not safe for concurrent use.
type Reader struct {
	rd  io.Reader
	lim Limits

	// buf[r:w] is input received but not yet consumed.
	// INVARIANT: 0 <= r <= w <= len(buf).
	buf  []byte
	r, w int
	err  error // sticky error from rd, returned once buf[r:w] is exhausted

	// arena holds the bytes of every argument of the last command; offs
	// holds (start, end) pairs into arena; args is the slice handed out.
	arena []byte
	offs  []int
	args  [][]byte

	beforeBlock func() error

	// budget, if set, is charged for held: the bytes of arena, offs and
	// args, and of buf beyond readBufSize.
	budget *Budget
	held   int64

	// inCommand is true while a command's frame is being parsed: from
	// its first byte until it is complete (or has failed).
	inCommand bool
}

// NewReader returns a Reader reading from rd with the given limits (zero
// fields take their defaults).
func NewReader(rd io.Reader, lim Limits) *Reader {
	return &Reader{rd: rd, lim: lim.withDefaults(), buf: make([]byte, readBufSize)}
}

// SetLimits replaces the Reader's limits (zero fields take their
// defaults) from the next command on. The server reads with tighter limits
// until a client authenticates.
func (r *Reader) SetLimits(lim Limits) { r.lim = lim.withDefaults() }

// SetBeforeBlock installs fn to be called every time the Reader has consumed
// all buffered input and is about to read from the underlying reader (which
// may block). The server uses it to flush pending replies: a pipeline of
// commands that arrived together is executed back to back and its replies
// leave in one write. If fn returns an error, ReadCommand returns it.
func (r *Reader) SetBeforeBlock(fn func() error) { r.beforeBlock = fn }

// SetBudget makes the Reader reserve from b every byte it holds beyond its
// fixed input buffer (see budget.go). A request that would take the budget
// past its limit fails with an "-OOM" *ReplyError; the Reader must not be
// used again after it.
func (r *Reader) SetBudget(b *Budget) { r.budget = b }

// Release drops the Reader's buffers and gives their bytes back to its
// Budget. Call it when the connection ends.
func (r *Reader) Release() {
	r.arena, r.offs, r.args = nil, nil, nil
	r.buf, r.r, r.w = nil, 0, 0
	r.account(0)
}

// account reserves from (or releases to) the budget the change in the
// bytes the Reader holds, plus extra bytes it is about to allocate, since
// the last call. If the budget refuses, nothing is reserved and the Reader
// must not be used again (the connection is closed, and Release gives back
// what it still holds).
func (r *Reader) account(extra int64) error {
	if r.budget == nil {
		return nil
	}
	// Argument bounds count too: a million empty arguments are 6 MB on
	// the wire but 40 MB of offs and args.
	held := int64(cap(r.arena)) + max(int64(cap(r.buf))-readBufSize, 0) +
		int64(cap(r.offs))*int64(unsafe.Sizeof(int(0))) + int64(cap(r.args))*int64(unsafe.Sizeof([]byte(nil))) + extra
	switch d := held - r.held; {
	case d > 0:
		if !r.budget.Reserve(d) {
			return errClientMemory
		}
	case d < 0:
		r.budget.Release(-d)
	}
	r.held = held
	return nil
}

// InCommand reports whether the Reader is inside a command's frame, that is
// whether a read it makes now waits for the rest of a command that has
// begun, rather than for a new one. The server's frame timeout uses it.
func (r *Reader) InCommand() bool { return r.inCommand }

// Buffered returns the number of input bytes received but not yet consumed.
func (r *Reader) Buffered() int { return r.w - r.r }

// ReadCommand reads the next non-empty command and returns its arguments;
// the first argument is the command name, as sent.
//
// ALIASING: the returned slice and every argument in it point into memory
// owned by the Reader and are valid only until the next call to
// ReadCommand. A caller that keeps an argument (for example a payload that
// is stored) must copy it (bytes.Clone).
//
// Empty inline lines and empty arrays ("*0\r\n", "*-1\r\n") are skipped, as
// Redis does. Errors:
//   - io.EOF: the input ended cleanly between commands;
//   - io.ErrUnexpectedEOF: the input ended inside a command;
//   - *ProtocolError: the frame is malformed or exceeds a limit; the stream
//     cannot be resynchronised and the Reader must not be used again;
//   - any other error from the underlying reader or from the before-block
//     hook.
func (r *Reader) ReadCommand() ([][]byte, error) {
	if cap(r.arena) > keepArena {
		r.arena = nil
	}
	if cap(r.offs) > 2*keepArgs {
		r.offs, r.args = nil, nil
	}
	if len(r.buf) > readBufSize && r.r == r.w {
		r.buf, r.r, r.w = make([]byte, readBufSize), 0, 0 // grown for one long line
	}
	if err := r.account(0); err != nil { // releases what was just dropped
		return nil, err
	}
	for {
		r.arena = r.arena[:0]
		r.offs = r.offs[:0]
		if r.r == r.w {
			if err := r.fill(); err != nil {
				return nil, err // clean EOF or read error at a command boundary
			}
		}
		var err error
		r.inCommand = true
		if r.buf[r.r] == '*' {
			err = r.readArray()
		} else {
			err = r.readInline()
		}
		r.inCommand = false
		if err != nil {
			return nil, err
		}
		if len(r.offs) > 0 {
			return r.buildArgs()
		}
	}
}

// buildArgs turns offs into slices of arena. It runs after the whole command
// is read because arena may be reallocated while it grows.
func (r *Reader) buildArgs() ([][]byte, error) {
	n := len(r.offs) / 2
	if cap(r.args) < n {
		// 24 bytes an argument: a million empty ones are 24 MB.
		if err := r.account(int64(n-cap(r.args)) * int64(unsafe.Sizeof([]byte(nil)))); err != nil {
			return nil, err
		}
		r.args = make([][]byte, n)
	}
	r.args = r.args[:n]
	for i := range n {
		s, e := r.offs[2*i], r.offs[2*i+1]
		r.args[i] = r.arena[s:e:e] // full slice expression: appends cannot clobber a neighbour
	}
	return r.args, nil
}

// growArena makes room for extra more bytes in arena, reserving the
// grown capacity from the budget before allocating it (append would
// allocate first and be charged only at the next read).
func (r *Reader) growArena(extra int) error {
	if cap(r.arena)-len(r.arena) >= extra {
		return nil
	}
	newCap := len(r.arena) + max(extra, len(r.arena))
	if err := r.account(int64(newCap - cap(r.arena))); err != nil {
		return err
	}
	grown := make([]byte, len(r.arena), newCap)
	copy(grown, r.arena)
	r.arena = grown
	return nil
}

// growOffs makes room for one more argument's bounds in offs, reserving
// first as growArena does.
func (r *Reader) growOffs() error {
	if cap(r.offs)-len(r.offs) >= 2 {
		return nil
	}
	newCap := max(16, 2*cap(r.offs))
	if err := r.account(int64(newCap-cap(r.offs)) * int64(unsafe.Sizeof(int(0)))); err != nil {
		return err
	}
	r.offs = append(make([]int, 0, newCap), r.offs...)
	return nil
}

// fill reads once from the underlying reader into buf, first compacting the
// unread bytes to the front. It returns nil if at least one byte was added.
func (r *Reader) fill() error {
	if r.r > 0 {
		r.w = copy(r.buf, r.buf[r.r:r.w])
		r.r = 0
	}
	if r.w == len(r.buf) {
		// Callers grow buf before asking for more when it is full.
		panic("server: Reader.fill on a full buffer")
	}
	if err := r.account(0); err != nil {
		return err
	}
	for {
		if r.err != nil {
			return r.err
		}
		if r.beforeBlock != nil {
			if err := r.beforeBlock(); err != nil {
				return err
			}
		}
		n, err := r.rd.Read(r.buf[r.w:])
		if n < 0 || n > len(r.buf)-r.w {
			panic("server: underlying reader returned an invalid count")
		}
		r.w += n
		if err != nil {
			r.err = err
		}
		if n > 0 {
			return nil
		}
	}
}

// midCommand converts a clean EOF inside a command into ErrUnexpectedEOF.
func midCommand(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readLine returns the next line without its '\n' (a preceding '\r' is left
// for the caller). If no '\n' appears within max bytes, it returns
// tooLong (a ProtocolError) without reading further. The returned slice
// aliases buf and is valid until the next fill.
func (r *Reader) readLine(max int, tooLong string) ([]byte, error) {
	scanned := 0 // bytes of buf[r.r:] already known not to hold '\n'
	for {
		if i := bytes.IndexByte(r.buf[r.r+scanned:r.w], '\n'); i >= 0 {
			end := r.r + scanned + i
			if end-r.r > max {
				return nil, &ProtocolError{Msg: tooLong}
			}
			line := r.buf[r.r:end]
			r.r = end + 1
			return line, nil
		}
		scanned = r.w - r.r
		if scanned > max {
			return nil, &ProtocolError{Msg: tooLong}
		}
		if r.r == 0 && r.w == len(r.buf) {
			// Full buffer without a line end: grow, but never past what
			// one line of max bytes plus its terminator needs.
			nb := make([]byte, min(2*len(r.buf), max+2))
			r.w = copy(nb, r.buf[r.r:r.w])
			r.r = 0
			r.buf = nb
		}
		if err := r.fill(); err != nil {
			return nil, midCommand(err)
		}
	}
}

// readInline parses one inline command line into arena/offs. An empty or
// all-blank line leaves offs empty.
func (r *Reader) readInline() error {
	const tooBig = "too big inline request"
	// +1: the limit excludes the optional '\r' of a "\r\n" terminator.
	line, err := r.readLine(r.lim.MaxInlineLen+1, tooBig)
	if err != nil {
		return err // an unterminated last line is io.ErrUnexpectedEOF
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) > r.lim.MaxInlineLen {
		return &ProtocolError{Msg: tooBig}
	}
	r.arena, r.offs, err = splitInline(line, r.arena, r.offs)
	if err != nil {
		return err
	}
	if len(r.offs)/2 > r.lim.MaxArrayLen {
		return &ProtocolError{Msg: "invalid multibulk length"}
	}
	return nil
}

// readArray parses "*<n>\r\n" followed by n bulk strings.
func (r *Reader) readArray() error {
	line, err := r.readLine(maxHeaderLen, "too big mbulk count string")
	if err != nil {
		return err
	}
	n, ok := parseHeader(line)
	if !ok || n > int64(r.lim.MaxArrayLen) {
		return &ProtocolError{Msg: "invalid multibulk length"}
	}
	total := 0
	for range n { // n <= 0 reads nothing: an empty command, skipped
		line, err := r.readLine(maxHeaderLen, "too big bulk count string")
		if err != nil {
			return err
		}
		if len(line) == 0 || line[0] != '$' {
			c := byte('\n')
			if len(line) > 0 {
				c = line[0]
			}
			return &ProtocolError{Msg: "expected '$', got '" + printable(c) + "'"}
		}
		blen, ok := parseHeader(line)
		if !ok || blen < 0 || blen > int64(r.lim.MaxBulkLen) {
			return &ProtocolError{Msg: "invalid bulk length"}
		}
		total += int(blen)
		if total > r.lim.MaxCommandLen {
			return &ProtocolError{Msg: "command too large"}
		}
		if err := r.readBulk(int(blen)); err != nil {
			return err
		}
	}
	return nil
}

// readBulk appends the n bytes of a bulk string and its "\r\n" trailer to
// arena and records its bounds in offs.
func (r *Reader) readBulk(n int) error {
	start := len(r.arena)
	for need := n; need > 0; {
		if r.r < r.w {
			take := min(need, r.w-r.r)
			if err := r.growArena(take); err != nil {
				return err
			}
			r.arena = append(r.arena, r.buf[r.r:r.r+take]...)
			r.r += take
			need -= take
			continue
		}
		if need < len(r.buf) {
			if err := r.fill(); err != nil {
				return midCommand(err)
			}
			continue
		}
		// Large remainder: read straight into the arena, reserving space
		// in proportion to what has arrived so far (see firstChunk).
		if err := r.readDirect(need, len(r.arena)-start); err != nil {
			return err
		}
		need = n - (len(r.arena) - start)
	}
	for r.w-r.r < 2 {
		// buf holds fewer than 2 bytes, so fill has room.
		if err := r.fill(); err != nil {
			return midCommand(err)
		}
	}
	if r.buf[r.r] != '\r' || r.buf[r.r+1] != '\n' {
		return &ProtocolError{Msg: "expected CRLF after bulk string"}
	}
	r.r += 2
	if err := r.growOffs(); err != nil {
		return err
	}
	r.offs = append(r.offs, start, start+n)
	return nil
}

// readDirect performs one read from the underlying reader straight into the
// arena, for at most need bytes. got is how many bytes of the current bulk
// string are already in the arena.
// REQUIRES: buf is empty (r.r == r.w).
func (r *Reader) readDirect(need, got int) error {
	if r.err != nil {
		return midCommand(r.err)
	}
	if r.beforeBlock != nil {
		if err := r.beforeBlock(); err != nil {
			return err
		}
	}
	want := min(need, max(firstChunk, got))
	if err := r.account(0); err != nil {
		return err
	}
	if err := r.growArena(want); err != nil { // where a huge bulk grows
		return err
	}
	dst := r.arena[len(r.arena) : len(r.arena)+want]
	nr, err := r.rd.Read(dst)
	if nr < 0 || nr > len(dst) {
		panic("server: underlying reader returned an invalid count")
	}
	r.arena = r.arena[:len(r.arena)+nr]
	if err != nil {
		r.err = err
		if nr == 0 {
			return midCommand(err)
		}
	}
	return nil
}

// parseHeader parses the count of a "*<n>\r" or "$<n>\r" line (the '\n' is
// already stripped). The count must be a canonical decimal int64: an
// optional '-', no leading zeros, no '+', no spaces.
func parseHeader(line []byte) (int64, bool) {
	if len(line) < 3 || line[len(line)-1] != '\r' {
		return 0, false
	}
	return parseInt(line[1 : len(line)-1])
}

// parseInt parses a canonical decimal int64 the way Redis's string2ll does:
// optional '-', then "0" or a non-zero digit followed by digits; no
// overflow.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] == '0' {
		return 0, len(b) == 1 && !neg
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if u > (1<<64-1-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u-1) - 1, true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// printable renders c for an error message without breaking the reply line.
func printable(c byte) string {
	if c < 0x20 || c >= 0x7f {
		const hex = "0123456789abcdef"
		return "\\x" + string([]byte{hex[c>>4], hex[c&15]})
	}
	return string([]byte{c})
}
