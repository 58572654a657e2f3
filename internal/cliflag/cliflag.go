// Package cliflag parses a sub-command's flags the way every memrl command
// line does: --help prints the usage to standard output and is not an
// error for the caller to report, and a bad flag or a stray positional
// argument is a usage error (exit status 2), never silently ignored.
//
// Why stray arguments matter: Go's flag package stops at the first
// non-flag, so in `memrl serve extra --addr 127.0.0.1:7399` every flag after
// "extra" was dropped and the server came up on the default port and
// folder. Parse refuses any positional argument unless the caller says how
// many it takes.
package cliflag

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// ErrHelp is returned by Parse after the usage was printed because the
// user asked for it (-h, -help, --help). Callers exit with status 0.
var ErrHelp = flag.ErrHelp

// UsageError is a command line that cannot be run: an unknown flag, a bad
// value, a missing or stray argument. Callers print it with the usage and
// exit with status 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// IsUsage reports whether err is (or wraps) a *UsageError.
func IsUsage(err error) bool {
	var ue *UsageError
	return errors.As(err, &ue)
}

// Stdout is where Parse prints the usage on --help; tests may replace it.
var Stdout io.Writer = os.Stdout

// Parse parses args into fs (which must have been created with
// flag.ContinueOnError) and allows at most maxArgs positional arguments
// (0 for commands that take none). On --help it prints fs's usage to
// Stdout and returns ErrHelp; on a bad flag or too many arguments it
// returns a *UsageError whose message holds the flag package's complaint
// and the usage.
func Parse(fs *flag.FlagSet, args []string, maxArgs int) error {
	var msg bytes.Buffer
	fs.SetOutput(&msg)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(Stdout)
		fs.Usage()
		return ErrHelp
	}
	if err == nil && fs.NArg() > maxArgs {
		fmt.Fprintf(&msg, "unexpected argument %q (flags go before arguments; every flag starts with -)\n", fs.Arg(maxArgs))
		fs.Usage()
		err = errors.New("bad arguments")
	}
	fs.SetOutput(os.Stderr)
	if err != nil {
		return &UsageError{Msg: string(bytes.TrimRight(msg.Bytes(), "\n"))}
	}
	return nil
}
