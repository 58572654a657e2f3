package serverann

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// server is a running `memrl serve` (or, in tests, a server in process).
type serverProc interface {
	Addr() string
	// PID is the process whose CPU time is the server's (procCPU).
	PID() int
	// Stop shuts the server down cleanly (SIGINT: the database is closed,
	// the index saved) and waits for it.
	Stop() error
	// Log returns what the server has logged so far.
	Log() string
}

// starter starts a server on the data folder dir and returns once it
// accepts connections.
type starter func(dir string) (serverProc, error)

// execServer is `memrl serve` run as a child process.
type execServer struct {
	cmd     *exec.Cmd
	addr    string
	logPath string
	exited  chan struct{}
}

func (s *execServer) Addr() string { return s.addr }
func (s *execServer) PID() int     { return s.cmd.Process.Pid }

func (s *execServer) Log() string {
	b, _ := os.ReadFile(s.logPath)
	return string(b)
}

func (s *execServer) Stop() error {
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(120 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("memrl serve did not exit within 120 s of SIGINT; killed")
	}
	if !s.cmd.ProcessState.Success() {
		return fmt.Errorf("memrl serve exited with %v", s.cmd.ProcessState)
	}
	return nil
}

// execStarter returns a starter of `bin serve --dir DIR --addr ADDR --sync
// syncName` on a free loopback port, with GOMAXPROCS set in its
// environment if gomaxprocs > 0, logging to logPath (appended, so that a
// restart's log follows the first run's). With cpus set it runs under
// taskset -c cpus (which execs the server: the process id is the
// server's). With unixSock set the server
// also listens on that Unix socket, and its Addr is "unix:" and the path,
// which dial understands: the clients use the socket.
func execStarter(bin, syncName string, gomaxprocs int, cpus, logPath, unixSock string) starter {
	return func(dir string) (serverProc, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		addr := ln.Addr().String()
		ln.Close()
		cmd := exec.Command(bin, "serve", "--dir", dir, "--addr", addr, "--sync", syncName)
		if unixSock != "" {
			cmd.Args = append(cmd.Args, "--unixsocket", unixSock)
			addr = "unix:" + unixSock
		}
		if cpus != "" {
			cmd = exec.Command("taskset", append([]string{"-c", cpus}, cmd.Args...)...)
		}
		cmd.Env = os.Environ()
		if gomaxprocs > 0 {
			cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(gomaxprocs))
		}
		logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(logf, "--- %s %s\n", time.Now().UTC().Format(time.RFC3339), strings.Join(cmd.Args, " "))
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			logf.Close()
			return nil, err
		}
		s := &execServer{cmd: cmd, addr: addr, logPath: logPath, exited: make(chan struct{})}
		go func() {
			cmd.Wait()
			logf.Close()
			close(s.exited)
		}()
		// Opening a large database (replaying the log, mapping the index)
		// takes a while before the port is bound.
		deadline := time.Now().Add(10 * time.Minute)
		for time.Now().Before(deadline) {
			select {
			case <-s.exited:
				return nil, fmt.Errorf("%s serve exited at start: %s", bin, lastLines(s.Log(), 20))
			default:
			}
			if c, err := netDial(addr, time.Second); err == nil {
				c.Close()
				return s, nil
			}
			time.Sleep(5 * time.Millisecond)
		}
		s.cmd.Process.Kill()
		<-s.exited
		return nil, fmt.Errorf("%s serve did not listen on %s within 10 minutes", bin, addr)
	}
}

// netDial connects to addr: host:port over TCP, or "unix:" and a path.
func netDial(addr string, timeout time.Duration) (net.Conn, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		return net.DialTimeout("unix", path, timeout)
	}
	return net.DialTimeout("tcp", addr, timeout)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// procCPU returns the CPU time (user + system) process pid has used.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:])
	// Fields after the name: state is f[0]; utime and stime are fields 14
	// and 15 of the whole line, f[11] and f[12] here, in clock ticks.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime", pid)
	}
	const ticksPerSecond = 100 // USER_HZ, 100 on Linux
	return time.Duration(ut+st) * time.Second / ticksPerSecond, nil
}
