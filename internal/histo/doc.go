// Package histo is a fixed-bucket latency histogram cheap enough to update
// on every command: Record is two atomic adds and takes no lock, so any
// number of goroutines may record into one Histogram while another reads
// it.
//
// # Buckets
//
// Values are nanoseconds. Values below 16 have a bucket each; above, every
// power of two [2^e, 2^(e+1)) is split into 16 equal buckets, so a bucket
// is at most 1/16 (6.25%) of its lower bound wide. Buckets stop at 2^36 ns
// (about 69 s); longer values share one overflow bucket. A Histogram is
// NumBuckets counters (about 4 KiB) and needs no allocation.
//
// Quantiles are read from a Snapshot and reported as the highest value of
// the bucket holding the quantile (like HdrHistogram's "highest equivalent
// value"), so they overstate by at most one bucket width. The power-of-two
// bounds 2^e are bucket bounds, so cumulative counts at them are exact;
// the Prometheus export uses them.
//
// A Snapshot read while values are recorded is not atomic across buckets:
// it may miss some values recorded during the read, never count one twice.
package histo
