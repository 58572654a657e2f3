package hostile

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Kind is one sort of hostile connection.
type Kind int

// The attacks; see the package documentation.
const (
	Malformed Kind = iota
	HugeLen
	BigFill
	HTTP
	Random
	HalfFrame
	Churn
	NoRead
	numKinds
)

// AllKinds lists every attack, in report order.
var AllKinds = []Kind{Malformed, HugeLen, BigFill, HTTP, Random, HalfFrame, Churn, NoRead}

var kindName = [numKinds]string{"malformed", "hugelen", "bigfill", "http", "random", "halfframe", "churn", "noread"}

func (k Kind) String() string { return kindName[k] }

func parseKind(s string) (Kind, bool) {
	for k, n := range kindName {
		if n == s {
			return Kind(k), true
		}
	}
	return 0, false
}

func kindNames(ks []Kind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.String()
	}
	return out
}

// How a hostile connection ended. The attacker decides when to give up;
// everything else is the server's doing.
const (
	endDialFailed     = "dial failed"
	endClosedAfterErr = "server closed it after an ERR reply"
	endClosedAfterRep = "server closed it after a non-ERR reply"
	endClosedSilent   = "server closed it without a reply"
	endReset          = "server reset it"
	endOpenReplied    = "open at the attacker's limit, had replied"
	endOpenSilent     = "open at the attacker's limit, silent"
	endWeClosed       = "attacker closed it at once"
	endWriteBlocked   = "attacker's writes blocked (server stopped reading)"
	endWriteFailed    = "attacker's write failed (server closed it)"
	endAllSent        = "attacker sent all it had, server still reading"
)

// malformedFrames are requests every RESP parser must refuse. Some are
// complete frames, some leave the parser waiting.
var malformedFrames = []string{
	"*abc\r\n",
	"*-5\r\n",
	"*+1\r\n$4\r\nPING\r\n",
	"*01\r\n$4\r\nPING\r\n",
	"*99999999999999999999\r\n",
	"*1\r\n$-7\r\n",
	"*1\r\n$x\r\nPING\r\n",
	"*1\r\n$01\r\nx\r\n",
	"*2\r\n$4\r\nECHO\r\n%3\r\nabc\r\n",
	"*1\r\n$4\r\nPINGxx\r\n",
	"*1\r\n$4\r\nPING",
	"*1\n$4\nPING\n",
	"*1\r\n$4\rPING\r\n",
	"\"unbalanced quotes\r\n",
	"PING 'a'b\r\n",
	"*2\r\n$4\r\nECHO\r\n$3\r\nabcdef\r\n",
}

const httpAttack = "POST / HTTP/1.1\r\nHost: x\r\nUser-Agent: hostile\r\n" +
	"Content-Type: text/plain\r\nContent-Length: 17\r\n\r\nMEM.DROP honest\r\n"

// attacker runs one hostile goroutine's attacks.
type attacker struct {
	addr  string
	end   time.Time // the attack phase's end: nothing outlives it
	stall time.Duration
	fill  int
	// maxBulk is the longest bulk string the server accepts (its CONFIG
	// GET proto-max-bulk-len): the largest length a header may declare
	// without being refused at once.
	maxBulk int64
	rng     *rand.Rand
	tally   *tally
}

// dial connects with a short timeout, bounded by the end of the phase.
func (a *attacker) dial() (*net.TCPConn, bool) {
	d := net.Dialer{Deadline: minTime(time.Now().Add(2*time.Second), a.end)}
	c, err := d.Dial("tcp", a.addr)
	if err != nil {
		return nil, false
	}
	return c.(*net.TCPConn), true
}

// dialFailed counts a failed connect, unless it failed only because the
// phase ended (the dial deadline is the phase's end).
func (a *attacker) dialFailed(k Kind) {
	if time.Now().Before(a.end) {
		a.tally.add(k, endDialFailed, nil)
	}
}

// abort closes c with SO_LINGER 0: an RST, and no TIME_WAIT on this side,
// so that thousands of short connections cannot use up ephemeral ports.
func abort(c *net.TCPConn) {
	c.SetLinger(0)
	c.Close()
}

// limit is when a stalling attack that starts now gives up.
func (a *attacker) limit() time.Time { return minTime(time.Now().Add(a.stall), a.end) }

// run performs one attack of kind k and records how it ended.
func (a *attacker) run(k Kind) {
	if k == Churn {
		a.churn()
		return
	}
	c, ok := a.dial()
	if !ok {
		a.dialFailed(k)
		return
	}
	defer abort(c)
	var ending string
	var reply []byte
	switch k {
	case Malformed:
		ending, reply = a.sendThenWatch(c, []byte(malformedFrames[a.rng.Intn(len(malformedFrames))]))
	case HugeLen:
		// Over the limit half the time, exactly at it otherwise.
		declared := int64(999999999)
		if a.rng.Intn(2) == 0 {
			declared = a.maxBulk
		}
		msg := "*2\r\n$4\r\nECHO\r\n$" + strconv.FormatInt(declared, 10) + "\r\n" + strings.Repeat("x", 1+a.rng.Intn(16))
		if a.rng.Intn(2) == 0 {
			if _, err := c.Write([]byte(msg)); err != nil {
				ending = endWriteFailed
			} else {
				ending = endWeClosed
			}
		} else {
			ending, reply = a.sendThenWatch(c, []byte(msg))
		}
	case BigFill:
		ending, reply = a.bigFill(c)
	case HTTP:
		ending, reply = a.sendThenWatch(c, []byte(httpAttack))
	case Random:
		b := make([]byte, 1+a.rng.Intn(4096))
		a.rng.Read(b)
		ending, reply = a.sendThenWatch(c, b)
	case HalfFrame:
		frames := []string{
			"*2\r\n$8\r\nMEM.DROP\r\n$6\r\nhon",
			"*2\r\n$4\r\nECHO\r\n$100\r\nabc",
			"*3\r\n$8\r\nMEM.DROP\r\n",
			"*2\r\n$4\r\nEC",
			"MEM.DROP hon",
		}
		ending, reply = a.sendThenWatch(c, []byte(frames[a.rng.Intn(len(frames))]))
	case NoRead:
		ending = a.noRead(c)
	}
	a.tally.add(k, ending, reply)
}

// sendThenWatch writes msg and reads until the server closes the
// connection or the stall limit passes, and says how it ended. It returns
// at most the first 4 KiB of what the server sent.
func (a *attacker) sendThenWatch(c *net.TCPConn, msg []byte) (string, []byte) {
	c.SetWriteDeadline(a.limit())
	if _, err := c.Write(msg); err != nil {
		return classifyWriteErr(err), nil
	}
	return a.watch(c)
}

// watch reads until EOF, error or the stall limit.
func (a *attacker) watch(c *net.TCPConn) (string, []byte) {
	c.SetReadDeadline(a.limit())
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if len(got) < 4096 {
			got = append(got, buf[:min(n, 4096-len(got))]...)
		}
		if err == nil {
			continue
		}
		switch {
		case errors.Is(err, io.EOF):
			switch {
			case len(got) == 0:
				return endClosedSilent, got
			case got[0] == '-':
				return endClosedAfterErr, got
			default:
				return endClosedAfterRep, got
			}
		case errors.Is(err, os.ErrDeadlineExceeded):
			if len(got) > 0 {
				return endOpenReplied, got
			}
			return endOpenSilent, got
		case errors.Is(err, syscall.ECONNRESET):
			return endReset, got
		default:
			return endReset, got
		}
	}
}

// bigFill declares the largest bulk string the server accepts and sends
// a.fill bytes of it (less if that is all it declared) in 64 KiB pieces,
// then stalls: how much does the server hold for it?
func (a *attacker) bigFill(c *net.TCPConn) (string, []byte) {
	c.SetWriteDeadline(a.limit())
	if _, err := c.Write([]byte("*2\r\n$4\r\nECHO\r\n$" + strconv.FormatInt(a.maxBulk, 10) + "\r\n")); err != nil {
		return classifyWriteErr(err), nil
	}
	fill := int(min(int64(a.fill), a.maxBulk))
	piece := bytes.Repeat([]byte("f"), 64<<10)
	for sent := 0; sent < fill; sent += len(piece) {
		if _, err := c.Write(piece[:min(len(piece), fill-sent)]); err != nil {
			return classifyWriteErr(err), nil
		}
	}
	return a.watch(c)
}

// noRead sends ECHO commands with 16 KiB arguments and never reads a
// reply, until a write blocks past the limit or fails.
func (a *attacker) noRead(c *net.TCPConn) string {
	arg := strings.Repeat("n", 16<<10)
	cmd := []byte("*2\r\n$4\r\nECHO\r\n$16384\r\n" + arg + "\r\n")
	c.SetWriteDeadline(a.limit())
	// At most 64 MiB of commands: bounded even if the server kept reading.
	for i := 0; i < 4096; i++ {
		if _, err := c.Write(cmd); err != nil {
			return classifyWriteErr(err)
		}
	}
	return endAllSent
}

// churn connects and disconnects up to 20 times, sometimes after sending
// a PING whose reply it never reads.
func (a *attacker) churn() {
	for i := 0; i < 20 && time.Now().Before(a.end); i++ {
		c, ok := a.dial()
		if !ok {
			a.dialFailed(Churn)
			continue
		}
		if a.rng.Intn(2) == 0 {
			c.Write([]byte("PING\r\n"))
		}
		if a.rng.Intn(2) == 0 {
			abort(c)
		} else {
			c.Close()
		}
		a.tally.add(Churn, endWeClosed, nil)
	}
}

func classifyWriteErr(err error) string {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return endWriteBlocked
	}
	return endWriteFailed
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
