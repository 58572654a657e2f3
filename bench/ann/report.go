package ann

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// printTable writes the human-readable results table.
func printTable(w io.Writer, rs []result) {
	fmt.Fprintf(w, "%-18s %6s %6s %5s %7s %3s %5s %8s %8s %9s %9s %9s %9s %8s %12s %10s\n",
		"index", "nprobe", "refine", "prune", "pruned", "thr", "batch", "R@1", "R@10", "QPS", "mean_us", "cpu_us", "p99_us", "build_s", "index_MB", "rss_MB")
	for _, r := range rs {
		fmt.Fprintf(w, "%-18s %6d %6d %5.2f %7.1f %3d %5d %8.4f %8.4f %9.0f %9.1f %9.1f %9.1f %8.1f %12.1f %10.1f\n",
			r.Index, r.NProbe, r.Refine, r.Prune, r.Pruned, r.Threads, r.Batch, r.Recall1, r.Recall10, r.QPS, r.MeanUS, r.CPUUS, r.P99US, r.BuildS,
			float64(r.IndexBytes)/1e6, float64(r.RSSBytes)/1e6)
	}
}

// writeJSON writes the results as a JSON array of objects.
func writeJSON(path string, rs []result) error {
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// residentBytes is this process's resident set size (VmRSS), or 0 where
// /proc is not available.
func residentBytes() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}
