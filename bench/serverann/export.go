package serverann

// What other benchmarks that run `memrl serve` reuse (bench/maintain,
// bench/mretrieve).

import "time"

// Server is a running server: its address, its process id (for its CPU
// time), a clean stop (SIGINT) and its log so far.
type Server = serverProc

// ExecStarter returns a function that starts `bin serve --dir DIR --addr
// ADDR --sync syncName` on a free loopback port (GOMAXPROCS set when
// gomaxprocs > 0, the output appended to logPath) and returns once it
// listens.
func ExecStarter(bin, syncName string, gomaxprocs int, logPath string) func(dir string) (Server, error) {
	return execStarter(bin, syncName, gomaxprocs, "", logPath, "")
}

// WorkDir returns dir (created), or a new temporary folder and a function
// that removes it.
func WorkDir(dir string) (string, func(), error) { return workDir(dir) }

// ProcCPU returns the CPU time (user + system) process pid has used, from
// /proc/PID/stat.
func ProcCPU(pid int) (time.Duration, error) { return procCPU(pid) }
