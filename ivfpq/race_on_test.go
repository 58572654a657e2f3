//go:build race

package ivfpq

// raceEnabled reports a build with the race detector. Under it sync.Pool
// drops a random quarter of its Puts on purpose (to shake out code that
// relies on pooled state), so pooled scratch is re-allocated and counting
// allocations says nothing about the code.
const raceEnabled = true
