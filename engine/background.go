package engine

import "time"

// runEvery is the body of the database's periodic background goroutines
// (the expiry sweeper, the pruner, the compaction trigger): it calls fn
// every interval until Close and closes done when it returns. An interval
// < 0 disables it (it only waits for Close). While the log has failed, a
// tick does nothing: every background job writes through the log, and a
// failed log is reported by the writes that meet it.
func (db *DB) runEvery(interval time.Duration, done chan struct{}, fn func()) {
	defer close(done)
	if interval < 0 {
		<-db.stop
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-db.stop:
			return
		case <-tick.C:
			if db.log.Err() == nil {
				fn()
			}
		}
	}
}
