package hostile

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

func (r *Report) aliveString() string {
	switch r.Alive {
	case 1:
		return "yes"
	case 0:
		return "NO"
	}
	return "unknown (no --pid)"
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) + " ms"
}

func mib(kib int64) string {
	if kib < 0 {
		return "n/a"
	}
	return strconv.FormatFloat(float64(kib)/1024, 'f', 1, 64) + " MiB"
}

// Print writes the report as aligned text tables.
func (r *Report) Print(out io.Writer) {
	c := r.Cfg
	fmt.Fprintf(out, "memrl bench hostile: %s, %d hostile goroutines (%s), quiet %v, attack %v, stall %v, bigfill %d bytes, server's bulk limit %d\n",
		c.Addr, c.Hostile, strings.Join(kindNames(c.Kinds), ","), c.Quiet, c.Duration, c.Stall, c.Fill, c.MaxBulk)
	fmt.Fprintf(out, "\n%-22s %12s %12s\n", "honest client", "quiet", "attack")
	fmt.Fprintf(out, "%-22s %12d %12d\n", "commands", len(r.Quiet), len(r.Attack))
	for _, p := range []struct {
		name string
		p    float64
	}{{"p50", 0.50}, {"p99", 0.99}, {"max", 1}} {
		fmt.Fprintf(out, "%-22s %12s %12s\n", p.name+" latency", ms(r.Quiet.pct(p.p)), ms(r.Attack.pct(p.p)))
	}
	fmt.Fprintf(out, "\nwrong answers          %d (of which %d in the final re-read of %d memories)\n", r.Wrong, r.FinalSweepWrong, r.FinalCount)
	fmt.Fprintf(out, "collection vanished    %d times (recreated each time)\n", r.Vanished)
	for _, s := range r.WrongLog {
		fmt.Fprintf(out, "  wrong: %s\n", s)
	}
	fmt.Fprintf(out, "honest errors          %d (network errors and timeouts)\n", r.HonestErrors)
	for _, s := range r.ErrLog {
		fmt.Fprintf(out, "  error: %s\n", s)
	}
	fmt.Fprintf(out, "server alive           %s\n", r.aliveString())
	if r.Reconnected {
		fmt.Fprintf(out, "fresh connection       PONG\n")
	} else {
		fmt.Fprintf(out, "fresh connection       FAILED: %s\n", r.ReconnectErr)
	}
	fmt.Fprintf(out, "server RSS             %s at the attack's start, %s largest sampled, %s at the end; VmHWM %s\n",
		mib(r.RSSStart), mib(r.RSSPeakSampled), mib(r.RSSEnd), mib(r.HWM))
	fmt.Fprintf(out, "http bodies run        %d (an +OK came back: \"MEM.DROP honest\" was executed)\n", r.HTTPRan)

	fmt.Fprintf(out, "\nhostile connections    %d\n", r.HostileConns)
	fmt.Fprintf(out, "%-10s %8s  %-52s %8s  %s\n", "kind", "conns", "ending", "count", "first reply")
	for _, k := range c.Kinds {
		ends := make([]string, 0, len(r.Ends[k]))
		for e := range r.Ends[k] {
			ends = append(ends, e)
		}
		sort.Strings(ends)
		for i, e := range ends {
			conns := ""
			if i == 0 {
				conns = strconv.FormatInt(r.Conns[k], 10)
			}
			fmt.Fprintf(out, "%-10s %8s  %-52s %8d  %s\n", k, conns, e, r.Ends[k][e], quoteReply(r.Samples[k][e]))
		}
	}
}

// quoteReply shows the start of a reply on one line.
func quoteReply(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	const max = 60
	s := strconv.Quote(string(b))
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
