// Package qtable holds the learned utilities of a collection's memories: for
// each memory id its Q value, visit count and reward statistics.
//
// The table is lock-striped: ids are spread over stripes by a hash of the
// id, and each stripe has its own mutex and map. A new table has 4 stripes
// and grows to 256 as it fills (a small collection's table costs a KiB,
// not the 68 KiB of 256 empty stripes). Rewards on different memories of
// a large table almost never contend, and a reward on one memory is atomic
// (read, compute, write under one stripe lock), so concurrent rewards on
// the same id lose no update.
//
// The table knows nothing of durability. The engine logs the result of every
// update to the write-ahead log from inside Update's callback, while the
// stripe lock is held, so that the log order of updates to one memory equals
// the order in which they were applied.
//
// For incremental checkpoints every entry carries a dirty mark: Put and a
// successful Update set it, Load (state read back from a checkpoint) does
// not, and TakeDirty returns a stripe's marked entries and clears their
// marks under the stripe lock, so a change made after the take marks the
// entry again. Each stripe keeps a list of the ids it marked, so a take
// costs what changed, not the size of the table.
//
// For monitoring (INFO keyspace's q_mean and q_std) every stripe keeps
// running sums of its entries' Q, updated under the stripe lock by every
// change, so QStats costs a lock of each stripe and never a scan of the
// entries: it does not hold up rewards however large the table.
package qtable
