package hostile

import (
	"errors"
	"flag"
	"fmt"
	"github.com/memrl/memrl/internal/cliflag"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ErrNotLoopback is returned by Main for an --addr that is not a loopback
// address: the benchmark sends hostile traffic and must never aim it at
// another machine.
var ErrNotLoopback = errors.New("hostile: --addr must be a loopback address (127.0.0.0/8 or ::1)")

// ErrFailed is returned (wrapped) by Main when the run saw a wrong honest
// answer or the server died; the report has already been printed.
var ErrFailed = errors.New("hostile: server failed the run")

// Main runs the benchmark with command-line args, writing the report to out.
// It returns an error wrapping ErrFailed if an honest answer was wrong or
// the server died.
func Main(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench hostile", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:6390", "server to attack (loopback only)")
	pid := fs.Int("pid", 0, "the server's process id, to sample its RSS from /proc and check it is alive")
	spawn := fs.Bool("spawn", false, "start `memrl serve` on a temporary folder and a free loopback port instead of using --addr")
	bin := fs.String("bin", "", "memrl binary for --spawn (default: this executable)")
	syncName := fs.String("sync", "always", "--sync of the spawned server")
	var cfg Config
	fs.DurationVar(&cfg.Quiet, "quiet", 10*time.Second, "honest client alone before the attack")
	fs.DurationVar(&cfg.Duration, "duration", 60*time.Second, "length of the attack")
	fs.IntVar(&cfg.Hostile, "hostile", 200, "concurrent hostile connections")
	fs.DurationVar(&cfg.Stall, "stall", 15*time.Second, "longest a stalling attack holds its connection")
	fs.IntVar(&cfg.Fill, "fill", 1<<20, "bytes of body a bigfill attack sends before it stalls")
	fs.DurationVar(&cfg.Pause, "pause", 5*time.Millisecond, "pause of each hostile goroutine between attacks")
	fs.IntVar(&cfg.Memories, "memories", 2000, "most memories the honest client keeps")
	fs.Float64Var(&cfg.Alpha, "alpha", 0.25, "ALPHA of the honest collection")
	fs.Int64Var(&cfg.Seed, "seed", 1, "random seed")
	kinds := fs.String("kinds", "", "attacks to run, comma-separated (default all: "+strings.Join(kindNames(AllKinds), ",")+")")
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return err
	}
	if *kinds != "" {
		for _, k := range strings.Split(*kinds, ",") {
			kind, ok := parseKind(strings.TrimSpace(k))
			if !ok {
				return fmt.Errorf("hostile: unknown attack %q (want %s)", k, strings.Join(kindNames(AllKinds), ","))
			}
			cfg.Kinds = append(cfg.Kinds, kind)
		}
	}
	cfg.Addr = *addr
	cfg.PID = *pid
	if *spawn {
		srv, err := spawnServer(*bin, *syncName)
		if err != nil {
			return err
		}
		defer srv.stop()
		cfg.Addr, cfg.PID, cfg.Alive = srv.addr, srv.cmd.Process.Pid, srv.alive
		fmt.Fprintf(out, "spawned %s serve --sync %s on %s (pid %d)\n", srv.cmd.Path, *syncName, srv.addr, cfg.PID)
	} else if cfg.PID > 0 {
		p := cfg.PID
		cfg.Alive = func() bool { return processAlive(p) }
	}
	if err := checkLoopback(cfg.Addr); err != nil {
		return err
	}
	rep, err := Run(cfg)
	if err != nil {
		return err
	}
	rep.Print(out)
	if !rep.OK() {
		return fmt.Errorf("%w: %d wrong answers, server alive: %s", ErrFailed, rep.Wrong, rep.aliveString())
	}
	return nil
}

// checkLoopback returns ErrNotLoopback unless addr's host is a loopback IP
// or "localhost".
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("hostile: bad --addr %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return ErrNotLoopback
	}
	return nil
}

// processAlive reports whether pid names a live process, not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain blanks or parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

// spawned is a `memrl serve` started by --spawn.
type spawned struct {
	cmd    *exec.Cmd
	addr   string
	dir    string
	exited chan struct{} // closed when the process has exited
}

func (s *spawned) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// stop interrupts the server, waits for it (at most 15 s, then kills it)
// and removes its folder.
func (s *spawned) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
	os.RemoveAll(s.dir)
}

// spawnServer starts bin (default this executable) as `serve` on a
// temporary folder and a free loopback port, and waits until it accepts
// connections.
func spawnServer(bin, syncName string) (*spawned, error) {
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		bin = exe
	}
	dir, err := os.MkdirTemp("", "memrl-hostile-")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve", "--dir", filepath.Join(dir, "data"), "--addr", addr, "--sync", syncName)
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	s := &spawned{cmd: cmd, addr: addr, dir: dir, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	for i := 0; i < 1000; i++ {
		if !s.alive() {
			break
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return s, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
	s.stop()
	return nil, fmt.Errorf("hostile: %s serve did not start on %s: %s", bin, addr, log)
}
