package server

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/internal/histo"
	"github.com/memrl/memrl/wal"
)

// The engine's part of INFO, CONFIG GET and the metrics, installed by
// RegisterMem: INFO persistence (the WAL and checkpoints), INFO keyspace
// (a line per collection), the mapped files in INFO memory, and CONFIG
// GET appendonly, appendfsync and dir.

// registerMemObservability installs the engine's INFO sections, CONFIG
// parameters and metrics for db.
func (s *Server) registerMemObservability(cur func() *engine.DB) {
	o := memObserver{cur: cur, ckpt: memCommands{cur: cur}.infoSection, srv: s}
	s.AddInfoSection("Persistence", o.persistenceInfo)
	s.AddInfoSection("Keyspace", o.keyspaceInfo)
	s.setDataUsed(func() int64 { return cur().DataMemory().Total() }) // datamem.go
	s.mu.Lock()
	s.extendInfoSectionLocked("Memory", o.memoryInfo)
	s.mu.Unlock()
	s.AddConfigParams(o.configParams)
	s.addMetricsSource(o)
}

type memObserver struct {
	cur func() *engine.DB // the database (RegisterMemFunc)
	// ckpt is INFO memrl's section; persistence repeats its checkpoint
	// fields so that both always agree.
	ckpt func() [][2]string
	srv  *Server // for its data memory limit (datamem.go)
}

func (o memObserver) db() *engine.DB { return o.cur() }

// AppendFsync maps a WAL sync policy to Redis's appendfsync values, for
// CONFIG GET and INFO persistence: always → "always" (a reply means
// fsynced), interval → "everysec" (fsynced on a timer, every
// --sync-interval, not every second), none → "no" (left to the OS).
func AppendFsync(p wal.SyncPolicy) string {
	switch p {
	case wal.SyncAlways:
		return "always"
	case wal.SyncInterval:
		return "everysec"
	case wal.SyncNone:
		return "no"
	}
	return p.String()
}

func (o memObserver) configParams() [][2]string {
	return [][2]string{
		{"appendonly", "yes"}, // every change is logged before it is acknowledged
		{"appendfsync", AppendFsync(o.db().SyncPolicy())},
		{"dir", o.db().Dir()},
		{"save", ""}, // no RDB snapshots: checkpoints are memrl's own
	}
}

// persistenceInfo is INFO persistence.
func (o memObserver) persistenceInfo() [][2]string {
	ws := o.db().WALStats()
	var lat histo.Snapshot
	o.db().WALSyncLatency(&lat)
	status, walErr := "ok", ""
	if err := o.db().Err(); err != nil {
		status, walErr = "err", err.Error()
	}
	var pct strings.Builder
	for i, p := range latencyPercentiles {
		if i > 0 {
			pct.WriteByte(',')
		}
		pct.WriteString(p.name + "=" + formatUsec(lat.Quantile(p.q)))
	}
	out := [][2]string{
		{"loading", "0"},
		{"aof_enabled", "1"},
		{"aof_last_write_status", status},
		{"appendfsync", AppendFsync(o.db().SyncPolicy())},
		{"wal_sync", o.db().SyncPolicy().String()},
		{"wal_error", walErr},
		{"wal_records", strconv.FormatUint(ws.Records, 10)},
		{"wal_bytes_written", strconv.FormatUint(ws.Bytes, 10)},
		{"wal_writes", strconv.FormatUint(ws.Writes, 10)},
		{"wal_segments", strconv.Itoa(ws.Segments)},
		{"wal_disk_bytes", strconv.FormatInt(ws.DiskBytes, 10)},
		{"wal_fsyncs", strconv.FormatUint(ws.Syncs, 10)},
		{"wal_fsync_usec", strconv.FormatUint(ws.SyncNanos/1000, 10)},
		{"wal_fsync_latency_percentiles_usec", pct.String()},
	}
	for _, kv := range o.ckpt() {
		if strings.HasPrefix(kv[0], "checkpoint") {
			out = append(out, kv)
		}
	}
	return out
}

// keyspaceField is a collection's field in INFO keyspace: "coll_" and its
// name, with ':' (allowed in names, but the field/value separator of INFO)
// written as "%3A".
func keyspaceField(name string) string {
	return "coll_" + strings.ReplaceAll(name, ":", "%3A")
}

// keyspaceInfo is INFO keyspace: a line per collection,
//
//	coll_<name>:memories=N,deleted=N,rows=N,dim=N,index=flat|ivfpq|flat+building|ivfpq+building,q_mean=F,q_std=F,mapped_bytes=N,data_bytes=N
func (o memObserver) keyspaceInfo() [][2]string {
	var out [][2]string
	for _, c := range o.db().CollectionStats() {
		out = append(out, [2]string{keyspaceField(c.Name),
			"memories=" + strconv.Itoa(c.Memories) +
				",deleted=" + strconv.FormatUint(c.DeadRows, 10) +
				",rows=" + strconv.FormatUint(uint64(c.Rows), 10) +
				",dim=" + strconv.Itoa(c.Dim) +
				",index=" + c.Index +
				",q_mean=" + strconv.FormatFloat(c.QMean, 'g', 6, 64) +
				",q_std=" + strconv.FormatFloat(c.QStd, 'g', 6, 64) +
				",mapped_bytes=" + strconv.FormatInt(c.MappedBytes, 10) +
				",data_bytes=" + strconv.FormatInt(c.DataBytes, 10)})
	}
	return out
}

// memoryInfo adds the engine's data to INFO memory: the mapped vector
// files (they count in RSS as their pages are read, not in used_memory),
// and what the data holds in memory (engine.DataMemory), in total as
// used_memory_dataset (what --maxmemory bounds, datamem.go) and by kind.
func (o memObserver) memoryInfo() [][2]string {
	mapped := o.db().MappedBytes()
	dm := o.db().DataMemory()
	total := dm.Total()
	return [][2]string{
		{"mem_mapped_files_bytes", strconv.FormatInt(mapped, 10)},
		{"mem_mapped_files_human", bytesHuman(uint64(mapped))},
		{"used_memory_dataset", strconv.FormatInt(total, 10)},
		{"used_memory_dataset_human", bytesHuman(uint64(max(total, 0)))},
		{"mem_vectors_bytes", strconv.FormatInt(dm.Vectors, 10)},
		{"mem_records_bytes", strconv.FormatInt(dm.Records, 10)},
		{"mem_index_bytes", strconv.FormatInt(dm.Index, 10)},
		{"mem_attrs_bytes", strconv.FormatInt(dm.Attrs, 10)},
		{"mem_attr_index_bytes", strconv.FormatInt(dm.AttrIndex, 10)},
		{"mem_history_bytes", strconv.FormatInt(dm.History, 10)},
		{"maxmemory_dataset", strconv.FormatInt(max(o.srv.cfg.MaxDataMemory, 0), 10)},
		{"maxmemory_policy", "noeviction"},
		{"writes_refused_maxmemory", strconv.FormatInt(o.srv.data.refused.Load(), 10)},
	}
}

var (
	descWALRecords = prometheus.NewDesc("memrl_wal_records_total", "Records appended to the write-ahead log.", nil, nil)
	descWALBytes   = prometheus.NewDesc("memrl_wal_written_bytes_total", "Bytes written to WAL segment files.", nil, nil)
	descWALSegs    = prometheus.NewDesc("memrl_wal_segments", "WAL segment files held.", nil, nil)
	descWALDisk    = prometheus.NewDesc("memrl_wal_disk_bytes", "Bytes of the WAL segment files held.", nil, nil)
	descWALFsync   = prometheus.NewDesc("memrl_wal_fsync_duration_seconds", "Durations of the fsyncs of WAL segment files.", nil, nil)
	descWALFailed  = prometheus.NewDesc("memrl_wal_failed", "1 once the log has failed (a write or fsync error; writes refused until restart).", nil, nil)
	descCkptLast   = prometheus.NewDesc("memrl_checkpoint_last_timestamp_seconds", "Unix time of the last successful checkpoint since start; 0 if none.", nil, nil)
	descCkptTook   = prometheus.NewDesc("memrl_checkpoint_last_duration_seconds", "How long the last successful checkpoint took.", nil, nil)
	descCkptFail   = prometheus.NewDesc("memrl_checkpoint_failures_total", "Failed checkpoints since start.", nil, nil)
	descCkptDeltas = prometheus.NewDesc("memrl_checkpoint_deltas", "Delta checkpoints over the current full one.", nil, nil)
	descCollMems   = prometheus.NewDesc("memrl_collection_memories", "Live memories.", []string{"collection"}, nil)
	descCollDead   = prometheus.NewDesc("memrl_collection_dead_rows", "Vector rows holding no live memory.", []string{"collection"}, nil)
	descCollQMean  = prometheus.NewDesc("memrl_collection_q_mean", "Mean Q of the live memories.", []string{"collection"}, nil)
	descCollQStd   = prometheus.NewDesc("memrl_collection_q_stddev", "Standard deviation of the Q of the live memories.", []string{"collection"}, nil)
	descCollMapped = prometheus.NewDesc("memrl_collection_mapped_bytes", "Bytes of the collection's vector file mapped into memory.", []string{"collection"}, nil)
	descCollData   = prometheus.NewDesc("memrl_collection_data_bytes", "Bytes the collection's data holds in memory (INFO memory used_memory_dataset's part).", []string{"collection"}, nil)
	descDataMemory = prometheus.NewDesc("memrl_data_memory_bytes", "Bytes the data holds in memory, by kind (INFO memory mem_<kind>_bytes).", []string{"kind"}, nil)
)

// Collect adds the engine's metrics to a scrape (metricsSource).
func (o memObserver) Collect(ch chan<- prometheus.Metric) {
	ws := o.db().WALStats()
	var lat histo.Snapshot
	o.db().WALSyncLatency(&lat)
	failed := 0.0
	if o.db().Err() != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(descWALRecords, prometheus.CounterValue, float64(ws.Records))
	ch <- prometheus.MustNewConstMetric(descWALBytes, prometheus.CounterValue, float64(ws.Bytes))
	ch <- prometheus.MustNewConstMetric(descWALSegs, prometheus.GaugeValue, float64(ws.Segments))
	ch <- prometheus.MustNewConstMetric(descWALDisk, prometheus.GaugeValue, float64(ws.DiskBytes))
	ch <- histogramMetric(descWALFsync, &lat)
	ch <- prometheus.MustNewConstMetric(descWALFailed, prometheus.GaugeValue, failed)

	st := o.db().CheckpointStatus()
	last := 0.0
	if !st.Last.IsZero() {
		last = float64(st.Last.UnixNano()) / 1e9
	}
	ch <- prometheus.MustNewConstMetric(descCkptLast, prometheus.GaugeValue, last)
	ch <- prometheus.MustNewConstMetric(descCkptTook, prometheus.GaugeValue, st.Took.Seconds())
	ch <- prometheus.MustNewConstMetric(descCkptFail, prometheus.CounterValue, float64(st.Failures))
	ch <- prometheus.MustNewConstMetric(descCkptDeltas, prometheus.GaugeValue, float64(st.Deltas))

	for _, c := range o.db().CollectionStats() {
		ch <- prometheus.MustNewConstMetric(descCollMems, prometheus.GaugeValue, float64(c.Memories), c.Name)
		ch <- prometheus.MustNewConstMetric(descCollDead, prometheus.GaugeValue, float64(c.DeadRows), c.Name)
		ch <- prometheus.MustNewConstMetric(descCollQMean, prometheus.GaugeValue, c.QMean, c.Name)
		ch <- prometheus.MustNewConstMetric(descCollQStd, prometheus.GaugeValue, c.QStd, c.Name)
		ch <- prometheus.MustNewConstMetric(descCollMapped, prometheus.GaugeValue, float64(c.MappedBytes), c.Name)
		ch <- prometheus.MustNewConstMetric(descCollData, prometheus.GaugeValue, float64(c.DataBytes), c.Name)
	}
	dm := o.db().DataMemory()
	for _, k := range []struct {
		kind string
		n    int64
	}{{"vectors", dm.Vectors}, {"records", dm.Records}, {"index", dm.Index}, {"attrs", dm.Attrs}, {"attr_index", dm.AttrIndex}, {"history", dm.History}} {
		ch <- prometheus.MustNewConstMetric(descDataMemory, prometheus.GaugeValue, float64(k.n), k.kind)
	}
}
