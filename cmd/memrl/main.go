// Command memrl runs the memrl server and its tools.
//
//	memrl serve [flags]           run the server (see `memrl serve --help`)
//	memrl cluster ACTION [flags]  a local cluster of memrl serve processes (start, stop, add, remove)
//	memrl bench NAME [flags]      a benchmark (`memrl bench --help` lists them)
//	memrl dump KIND PATH          a file's records or header, readable (wal, checkpoint, index, vectors)
//	memrl info                    build and CPU facts (SIMD kernels in use)
//	memrl version                 version, Go version and SIMD level
//	memrl help [command]          usage
//
// Every command prints its usage and exits 0 on --help; an unknown command,
// flag or stray argument prints the usage and exits 2; a failure while
// running exits 1. See README.md and docs/PROTOCOL.md.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/memrl/memrl/internal/cliflag"
)

// usage is memrl help's text. The sub-commands of cluster, bench and dump
// come from their tables (subcommands.go), so the list cannot drift from
// what runs; TestHelpListsEverySubcommand checks the rest.
func usage() string {
	rows := [][2]string{{"memrl serve [flags]", "run the server (memrl serve --help for its flags)"},
		{"memrl cluster " + names(clusterCommands) + " [flags]", "a local cluster of serve processes (memrl cluster --help)"}}
	rows = append(rows, usageRows("memrl bench", benchCommands)...)
	rows = append(rows,
		[2]string{"memrl dump " + names(dumpKinds) + " PATH", "a file's records or header, readable (memrl dump --help)"},
		[2]string{"memrl info", "build and CPU facts (SIMD kernels in use)"},
		[2]string{"memrl version", "version, Go version and SIMD level"},
		[2]string{"memrl help [command]", "this text, or a command's flags"})
	return "memrl: episodic memory with learned utilities, served over RESP2.\n\nusage:\n" + columns(rows)
}

// commands maps each command to the function that runs it with the
// arguments after its name.
var commands = map[string]func(args []string) error{
	"serve":   serve,
	"bench":   bench,
	"dump":    dump,
	"info":    info,
	"version": version,
}

// help reads commands, so it joins the map at init (a literal entry would
// be an initialisation cycle).
func init() { commands["help"] = help }

func main() { os.Exit(run(os.Args[1:])) }

// run executes one command line and returns the exit status: 0 on success
// or --help, 2 for a command line that cannot be run, 1 for a failure.
func run(args []string) int {
	if len(args) == 0 {
		fmt.Print(usage())
		return 0
	}
	name := args[0]
	if name == "-h" || name == "-help" || name == "--help" {
		name = "help"
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "memrl: unknown command %q\n\n%s", args[0], usage())
		return 2
	}
	err := cmd(args[1:])
	switch {
	case err == nil, errors.Is(err, cliflag.ErrHelp):
		return 0
	case cliflag.IsUsage(err):
		fmt.Fprintf(os.Stderr, "memrl %s: %v\n", name, err)
		return 2
	default:
		fmt.Fprintf(os.Stderr, "memrl %s: %v\n", name, err)
		return 1
	}
}

// help prints the general usage, or a command's own (memrl help serve).
func help(args []string) error {
	switch {
	case len(args) == 0:
		fmt.Print(usage())
		return nil
	case len(args) > 2:
		return cliflag.Usagef("help takes at most a command and a sub-command, got %q", args)
	}
	if args[0] == "help" {
		fmt.Print(usage())
		return nil
	}
	cmd, ok := commands[args[0]]
	if !ok {
		return cliflag.Usagef("no such command %q\n\n%s", args[0], usage())
	}
	return cmd(append(args[1:], "--help"))
}
