package maintain

import (
	"fmt"
	"io"
	"strconv"
)

// printTable prints the run as Markdown tables: one row per step, then the
// writers' latencies idle and during compaction.
func printTable(out io.Writer, rep *report) {
	fmt.Fprintf(out, "\n%s memories of dimension %d, %d queries; recall@10 against the exact 10 nearest live memories; "+
		"QPS: one client one query at a time over the queries, and %d clients for the duration; "+
		"disk: the data folder's allocated bytes after a MEM.CHECKPOINT; load: the 1-minute load average\n\n",
		commas(int64(rep.N)), rep.Dim, rep.NQ, rep.Clients)
	fmt.Fprintf(out, "| step | memories | disk (du) | recall@10 | QPS, 1 client | p99, 1 client | QPS, %d clients | load | time of the step | notes |\n", rep.Clients)
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, s := range rep.Steps {
		if s.Retrieval == nil {
			t := "—"
			if s.Seconds > 0 {
				t = formatSeconds(s.Seconds)
			}
			fmt.Fprintf(out, "| %s | | | | | | | | %s | %s |\n", s.Step, t, s.Note)
			continue
		}
		r := s.Retrieval
		t := "—"
		if s.Seconds > 0 {
			t = formatSeconds(s.Seconds)
		}
		fmt.Fprintf(out, "| %s | %s | %s | %.3f | %.0f | %.1f ms | %.0f | %s | %s | %s |\n",
			s.Step, commas(s.Memories), human(s.DiskBytes), r.Recall10, r.QPS1, r.P99US/1e3, r.QPSN, s.Load, t, s.Note)
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| writers (1 MEM.ADD + 1 MEM.REWARD client, one command at a time) | adds | add p50 | add p99 | rewards | reward p50 | reward p99 |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|")
	for _, x := range []struct {
		name string
		w    writerStats
	}{{"idle", rep.WritersIdle}, {"during MEM.COMPACT WAIT", rep.WritersDuring}} {
		if !x.w.Available {
			fmt.Fprintf(out, "| %s | not available (no compaction) | | | | | |\n", x.name)
			continue
		}
		fmt.Fprintf(out, "| %s (%.1f s) | %d | %.2f ms | %.2f ms | %d | %.2f ms | %.2f ms |\n", x.name, x.w.Seconds,
			x.w.Adds, x.w.AddP50US/1e3, x.w.AddP99US/1e3, x.w.Rewards, x.w.RewP50US/1e3, x.w.RewP99US/1e3)
	}
}

func formatSeconds(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.1f ms", s*1e3)
	}
	return fmt.Sprintf("%.2f s", s)
}

// human prints a byte count in MiB or GiB.
func human(b int64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// commas prints n with thousands separators.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return "-" + commas(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
