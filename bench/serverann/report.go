package serverann

import (
	"fmt"
	"io"
	"strings"
)

const rowHeader = "phase            clients  queries  R@10       QPS   p50_ms   p99_ms   max_ms  cpu_us/q"

func printRow(w io.Writer, m measurement) {
	fmt.Fprintf(w, "  %-15s %7d %8d %5.3f %9.0f %8.2f %8.2f %8.2f %9.0f\n",
		m.Phase, m.Clients, m.Queries, m.Recall10, m.QPS, m.P50US/1e3, m.P99US/1e3, m.MaxUS/1e3, m.CPUUSPerQuery)
}

// printReport prints the run's table: the fill, the index at each stage,
// every row, and the server's QPS over the in-process QPS.
func printReport(w io.Writer, r *report) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "fill: %d memories in %.1fs = %.0f MEM.ADD/s\n", r.Memories, r.FillSeconds, r.FillRate)
	fmt.Fprintf(w, "index after the fill:  %s\n", r.IndexAtFill)
	fmt.Fprintf(w, "index when idle:       %s\n", r.IndexIdle)
	fmt.Fprintf(w, "index after restart:   %s (builds since the restart: %d)\n", r.IndexRestart, len(r.RebuiltAfter))
	if r.IndexInProc != "" {
		fmt.Fprintf(w, "index in process:      %s\n", r.IndexInProc)
	}
	fmt.Fprintf(w, "restart: clean stop %.1fs, listening after %.0f ms, first answer after %.0f ms\n", r.StopS, r.ListenMS, r.FirstAnswerMS)
	if r.InProcOpenMS > 0 {
		fmt.Fprintf(w, "in process: open + first answer %.0f ms\n", r.InProcOpenMS)
	}
	for _, b := range r.Builds {
		if i := strings.Index(b, "IVF-PQ"); i >= 0 {
			b = b[i:]
		}
		fmt.Fprintf(w, "build: %s\n", b)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "  "+rowHeader)
	for _, m := range r.Rows {
		printRow(w, m)
	}
	// Server against in process at the same number of clients.
	var srv, inp *measurement
	for i := range r.Rows {
		m := &r.Rows[i]
		if m.Clients > 1 && m.Phase == "after restart" {
			srv = m
		}
		if m.Clients > 1 && m.Phase == "in process" {
			inp = m
		}
	}
	if srv != nil && inp != nil && inp.QPS > 0 && srv.CPUUSPerQuery > 0 {
		fmt.Fprintf(w, "\nserver (after restart, %d clients) / in process (%d goroutines): QPS %.2f; per core (queries per CPU-second of the server process over the in-process one) %.2f\n",
			srv.Clients, inp.Clients, srv.QPS/inp.QPS, inp.CPUUSPerQuery/srv.CPUUSPerQuery)
	}
}
