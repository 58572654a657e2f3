package server

// A transaction's reply, held to the client-memory budget.
//
// EXEC builds its queued commands' replies in memory (so that no lock is
// held while a slow client reads them) and sends them once all have run.
// Every byte of that reply is reserved from the Budget before it is held:
// a command whose reply does not fit has what it wrote dropped and -OOM
// as its element (errTxReplyMemory), and the next commands still run.
// The memory is given back once the reply has been handed to the
// connection's writer. So a transaction of large reads cannot take the
// server past --maxmemory, as 8 queued MEM.MGETs of 40 MB payloads took a
// 256 MB server to 1.9 GB before.
//
// The -OOM element itself (under 200 bytes) is charged past the limit if
// need be: the client must learn what became of its command, and queued
// commands already hold more than that each.

// errTxReplyMemory is the element of a queued command whose reply would
// pass the budget. The command ran: a write's change is made.
var errTxReplyMemory = &ReplyError{Code: "OOM", Msg: "the reply of this command would take client buffers " +
	"past 'maxmemory' and was dropped (the command ran); ask for fewer memories or without payloads, " +
	"or run it outside MULTI"}

// replyChunk is the size of the chunks small writes are gathered in.
const replyChunk = 64 << 10

// replyBuf is a reply being built in memory, its chunks' capacity
// reserved from a Budget. It is not safe for concurrent use.
type replyBuf struct {
	b        *Budget
	chunks   [][]byte
	size     int64 // bytes held
	reserved int64 // capacity of chunks, all reserved from b
	// refused is set when a Write did not fit; every later Write fails
	// until undo clears it.
	refused bool
	// forcing makes Write hold past the budget (the -OOM element).
	forcing bool
}

// Write appends p if the budget can hold it; otherwise it holds nothing
// of p, sets refused and returns errClientMemory.
func (r *replyBuf) Write(p []byte) (int, error) {
	if r.forcing {
		r.force(p)
		return len(p), nil
	}
	if r.refused {
		return 0, errClientMemory
	}
	n := len(p)
	if last := len(r.chunks) - 1; last >= 0 {
		c := r.chunks[last]
		k := copy(c[len(c):cap(c)], p)
		r.chunks[last] = c[:len(c)+k]
		r.size += int64(k)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	c := max(len(p), replyChunk)
	if !r.b.Reserve(int64(c)) {
		r.refused = true
		return n - len(p), errClientMemory
	}
	r.reserved += int64(c)
	r.chunks = append(r.chunks, append(make([]byte, 0, c), p...))
	r.size += int64(len(p))
	return n, nil
}

// undo drops every byte past the first size ones (what a refused command
// wrote) and clears refused.
func (r *replyBuf) undo(size int64) {
	r.refused = false
	for r.size > size {
		last := len(r.chunks) - 1
		c := r.chunks[last]
		if keep := int64(len(c)) - (r.size - size); keep > 0 {
			r.chunks[last] = c[:keep]
			r.size = size
			return
		}
		r.size -= int64(len(c))
		r.reserved -= int64(cap(c))
		r.b.Release(int64(cap(c)))
		r.chunks[last] = nil
		r.chunks = r.chunks[:last]
	}
}

// force appends p past the budget's limit if need be (the -OOM element).
func (r *replyBuf) force(p []byte) {
	c := make([]byte, len(p)) // cap == len: what is released is what was charged
	copy(c, p)
	r.b.charge(int64(len(c)))
	r.reserved += int64(len(c))
	r.chunks = append(r.chunks, c)
	r.size += int64(len(c))
}

// release gives back everything held.
func (r *replyBuf) release() {
	r.b.Release(r.reserved)
	r.chunks, r.size, r.reserved = nil, 0, 0
}
