package main

import (
	"strings"
)

// Sub-command tables. memrl bench NAME, memrl cluster ACTION and memrl
// dump KIND each dispatch through a table, and their usage texts, like
// memrl help's, are written from the same tables: a sub-command added to
// a table is listed everywhere, and the help cannot name one that does not
// run (memrl help once listed 5 of bench's 10 benchmarks and none of
// cluster add/remove).

// subcommand is one entry of a sub-command table.
type subcommand struct {
	name    string                    // as typed: memrl bench <name>
	args    string                    // the usage line's arguments after the name
	summary string                    // what it does, one line
	run     func(args []string) error // with the arguments after the name; nil where the parent runs it (dump)
}

// lookup returns the entry of table named name.
func lookup(table []subcommand, name string) (subcommand, bool) {
	for _, s := range table {
		if s.name == name {
			return s, true
		}
	}
	return subcommand{}, false
}

// names returns the table's names joined by "|", as usage lines show a
// choice (start|stop|add|remove).
func names(table []subcommand) string {
	ns := make([]string, len(table))
	for i, s := range table {
		ns[i] = s.name
	}
	return strings.Join(ns, "|")
}

// usageRows returns one row per entry, "prefix name args" and its summary,
// for columns.
func usageRows(prefix string, table []subcommand) [][2]string {
	rows := make([][2]string, len(table))
	for i, s := range table {
		rows[i] = [2]string{strings.TrimSpace(prefix + " " + s.name + " " + s.args), s.summary}
	}
	return rows
}

// usageWidth is where the summaries of a usage text start: a row whose
// left part is wider runs its summary on after two spaces.
const usageWidth = 33

// columns lays rows out as usage lines: two spaces, the left part, and the
// summary from column usageWidth.
func columns(rows [][2]string) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString("  ")
		b.WriteString(r[0])
		if r[1] != "" {
			b.WriteString(strings.Repeat(" ", max(2, usageWidth-len([]rune(r[0])))))
			b.WriteString(r[1])
		}
		b.WriteByte('\n')
	}
	return b.String()
}
