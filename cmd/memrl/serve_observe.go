package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/memrl/memrl/server"
)

// observeFlags are memrl serve's observability flags: logging, SLOWLOG and
// the Prometheus metrics listener.
type observeFlags struct {
	logFormat   string
	logLevel    string
	metricsAddr string
	pprof       bool
	slowerThan  int64
	slowMaxLen  int
}

// addObserveFlags defines the observability flags on fs.
func addObserveFlags(fs *flag.FlagSet) *observeFlags {
	o := &observeFlags{}
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json (log/slog, to stderr)")
	fs.StringVar(&o.logLevel, "log-level", "info", "least severe level logged: debug, info, warn or error")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://HOST:PORT/metrics (loopback only: no authentication); empty disables")
	fs.BoolVar(&o.pprof, "pprof", false, "also serve Go's net/http/pprof under /debug/pprof/ on --metrics-addr")
	fs.Int64Var(&o.slowerThan, "slowlog-log-slower-than", server.DefaultSlowlogSlowerThan, "SLOWLOG threshold in microseconds (negative disables, 0 logs every command)")
	fs.IntVar(&o.slowMaxLen, "slowlog-max-len", server.DefaultSlowlogMaxLen, "SLOWLOG entries kept")
	return o
}

// check validates the flags, so that bad ones stop memrl serve before it
// opens the database.
func (o *observeFlags) check() error {
	if o.slowMaxLen < 0 {
		return fmt.Errorf("--slowlog-max-len %d: must be at least 0", o.slowMaxLen)
	}
	if o.pprof && o.metricsAddr == "" {
		return errors.New("--pprof needs --metrics-addr: profiles are served on the metrics listener")
	}
	if o.metricsAddr != "" {
		if err := checkLoopback(o.metricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
	}
	_, err := o.logger(io.Discard)
	return err
}

// checkLoopback refuses an address whose host is not a loopback address
// or "localhost": the metrics listener has no authentication, and with
// --pprof it can profile the process, so it is never exposed beyond the
// machine. (Expose it through a reverse proxy or an SSH tunnel that does
// authenticate.)
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if server.IsLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("%s is not a loopback address; the metrics listener has no authentication, so it listens on loopback only (127.0.0.1, ::1, localhost)", addr)
}

// logger returns the slog logger --log-format and --log-level ask for,
// writing to w.
func (o *observeFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", o.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch o.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", o.logFormat)
}

// engineLogf bridges the engine's printf-style Options.Logf to l. The
// engine logs recovery reports and progress, and background failures with
// the error as an argument: a message with an error argument is logged at
// level Error, any other at Info.
func engineLogf(l *slog.Logger) func(format string, args ...any) {
	return func(format string, args ...any) {
		level := slog.LevelInfo
		for _, a := range args {
			if _, ok := a.(error); ok {
				level = slog.LevelError
				break
			}
		}
		msg := strings.TrimPrefix(fmt.Sprintf(format, args...), "memrl: ")
		l.Log(context.Background(), level, msg, "source", "engine")
	}
}

// start applies the SLOWLOG settings to srv and starts the metrics
// listener if asked. The returned stop closes that listener.
func (o *observeFlags) start(srv *server.Server, log *slog.Logger) (stop func(context.Context), err error) {
	srv.SetSlowlog(o.slowerThan, o.slowMaxLen)
	if o.metricsAddr == "" {
		return func(context.Context) {}, nil
	}
	ln, err := net.Listen("tcp", o.metricsAddr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	hs := &http.Server{
		Handler:           srv.MetricsHandler(o.pprof),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener failed", "addr", ln.Addr().String(), "err", err)
		}
	}()
	log.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics", "pprof", o.pprof)
	return func(ctx context.Context) { hs.Shutdown(ctx) }, nil
}
