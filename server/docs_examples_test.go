package server

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The redis-cli examples of README.md and docs/PROTOCOL.md, run as a user
// pastes them, so that they stay true.

// fencedBlockAfter returns the lines of the first ``` block of doc after
// the first line containing marker.
func fencedBlockAfter(t *testing.T, doc, marker string) []string {
	t.Helper()
	i := strings.Index(doc, marker)
	if i < 0 {
		t.Fatalf("no %q in the document", marker)
	}
	rest := doc[i:]
	start := strings.Index(rest, "```")
	if start < 0 {
		t.Fatalf("no code block after %q", marker)
	}
	rest = rest[start:]
	rest = rest[strings.Index(rest, "\n")+1:] // past the opening fence and its language
	end := strings.Index(rest, "```")
	if end < 0 {
		t.Fatalf("the code block after %q does not end", marker)
	}
	return strings.Split(strings.TrimRight(rest[:end], "\n"), "\n")
}

// cliSession runs lines, one command each, through one redis-cli
// connection (stdin, so MULTI/EXEC spans them) and returns its output as
// redis-cli shows it at a terminal (--no-raw).
func cliSession(t *testing.T, cli, addr string, lines []string) string {
	t.Helper()
	h, p := hostPort(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, "--no-raw", "-h", h, "-p", p)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %q: %v\n%s", lines, err, out)
	}
	return string(out)
}

// TestDocsRedisCLIExamples runs, against one server and in this order:
// README.md's redis-cli session (each reply compared with the one shown,
// up to a "..." that cuts it), README.md's maintenance lines (each pasted
// as it is, none an error), and PROTOCOL.md's MULTI example, which
// continues the README's 4-d `plans` (no error, the replies it names).
func TestDocsRedisCLIExamples(t *testing.T) {
	cli := redisTool(t, "redis-cli")
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	protocol, err := os.ReadFile("../docs/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := startMem(t)

	// The session: "127.0.0.1:6390> command" lines, each followed by its
	// reply.
	const prompt = "127.0.0.1:6390> "
	type step struct {
		cmd  string
		want []string
	}
	var steps []step
	for _, l := range fencedBlockAfter(t, string(readme), "A session with `redis-cli") {
		if c, ok := strings.CutPrefix(l, prompt); ok {
			steps = append(steps, step{cmd: c})
		} else if len(steps) > 0 {
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
		}
	}
	if len(steps) < 5 {
		t.Fatalf("README's session has %d commands", len(steps))
	}
	for _, s := range steps {
		got := strings.Split(strings.TrimRight(cliSession(t, cli, ts.addr, []string{s.cmd}), "\n"), "\n")
		want := s.want
		if n := len(want); n > 0 && strings.TrimSpace(want[n-1]) == "..." {
			want = want[:n-1]
			got = got[:min(len(got), len(want))]
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("README: %s\nreplies\n%s\nREADME shows\n%s", s.cmd, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	// The maintenance lines, each a command as it is (no comments).
	maint := fencedBlockAfter(t, string(readme), "Keeping a long-lived memory healthy")
	if len(maint) < 5 {
		t.Fatalf("README's maintenance block has %d lines", len(maint))
	}
	for _, l := range maint {
		if strings.Contains(l, "#") {
			t.Errorf("README maintenance line %q holds a '#', which redis-cli sends as an argument", l)
		}
		// An unbalanced quote (a comment's "rows'") makes redis-cli send
		// nothing and say "Invalid argument(s)".
		if out := cliSession(t, cli, ts.addr, []string{l}); strings.Contains(out, "(error)") || strings.Contains(out, "Invalid argument") {
			t.Errorf("README maintenance line %q: %s", l, out)
		}
	}

	// PROTOCOL.md's MULTI example: "COMMAND   reply, said" lines; the
	// command is what comes before the first run of two spaces.
	var cmds []string
	for _, l := range fencedBlockAfter(t, string(protocol), "## Transactions") {
		c, _, _ := strings.Cut(l, "  ")
		cmds = append(cmds, strings.TrimSpace(c))
	}
	if len(cmds) < 3 || cmds[0] != "MULTI" || cmds[len(cmds)-1] != "EXEC" {
		t.Fatalf("PROTOCOL.md's MULTI example: %q", cmds)
	}
	out := cliSession(t, cli, ts.addr, cmds)
	if strings.Contains(out, "(error)") {
		t.Fatalf("PROTOCOL.md's MULTI example %q on the README's plans:\n%s", cmds, out)
	}
	if got, want := strings.Count(out, "QUEUED\n"), len(cmds)-2; got != want {
		t.Errorf("PROTOCOL.md's MULTI example: %d QUEUED, want %d:\n%s", got, want, out)
	}
	// EXEC's array has one element per queued command: "1) ", "2) ", …
	// at the start of a line.
	if got := len(regexp.MustCompile(`(?m)^\d+\) `).FindAllString(out, -1)); got != len(cmds)-2 {
		t.Errorf("PROTOCOL.md's MULTI example: EXEC's reply has %d elements, want %d:\n%s", got, len(cmds)-2, out)
	}
	// The note under the example names the new id and memory 2's new Q.
	if !strings.Contains(out, "1) (integer) 3\n") || !strings.Contains(out, `"0.755"`) ||
		!strings.Contains(string(protocol), "the new memory is 3") || !strings.Contains(string(protocol), "0.755") {
		t.Errorf("PROTOCOL.md's MULTI example replies\n%s\nnot what its note says", out)
	}
}
