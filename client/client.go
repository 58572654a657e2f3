package client

import (
	"context"
	"crypto/tls"
	"errors"

	"github.com/redis/go-redis/v9"
)

// Options configures New. Give either Redis (a go-redis client you made and
// keep owning) or Addr (New then makes a *redis.Client for it and Close
// closes it).
type Options struct {
	// Redis is the go-redis client every command is sent through: a
	// *redis.Client, *redis.Ring, *redis.ClusterClient or anything else that
	// implements redis.UniversalClient. Its retry setting is its maker's
	// choice; see Addr for why the client New makes does not retry. Close
	// does not close it.
	Redis redis.UniversalClient

	// Addr is the server's "host:port", used when Redis is nil.
	// The go-redis client made for it never retries a command (MaxRetries
	// -1): a write whose reply was lost may have been applied, and sending
	// MEM.ADD again would store the memory twice. Give the memory a KEY to
	// make a retried add safe (the second one fails with ErrKeyExists).
	Addr string
	// Username and Password authenticate (AUTH) when the server has users
	// or a password; TLSConfig enables TLS. Used only with Addr.
	Username  string
	Password  string
	TLSConfig *tls.Config
}

// ErrNoAddress: New needs Options.Redis or Options.Addr.
var ErrNoAddress = errors.New("memrl client: Options needs Redis or Addr")

// Client sends memrl's MEM.* commands with typed arguments and results.
// It is safe for concurrent use by many goroutines, as the go-redis client
// under it is.
type Client struct {
	rdb   redis.UniversalClient
	owned bool // New made rdb, so Close closes it
}

// New returns a Client for opt. It does not connect: the first command
// does (use Ping to check the server is there).
func New(opt Options) (*Client, error) {
	if opt.Redis != nil {
		return &Client{rdb: opt.Redis}, nil
	}
	if opt.Addr == "" {
		return nil, ErrNoAddress
	}
	rdb := redis.NewClient(&redis.Options{
		Addr:       opt.Addr,
		Username:   opt.Username,
		Password:   opt.Password,
		TLSConfig:  opt.TLSConfig,
		MaxRetries: -1,
		// memrl speaks RESP2: HELLO 3 gets -NOPROTO and go-redis falls
		// back, but asking for 2 saves that round trip.
		Protocol: 2,
	})
	return &Client{rdb: rdb, owned: true}, nil
}

// Redis returns the go-redis client under c, for commands this package
// does not wrap (INFO, CONFIG GET, SLOWLOG, ...).
func (c *Client) Redis() redis.UniversalClient { return c.rdb }

// Close closes the go-redis client if New made it (from Options.Addr);
// a client given as Options.Redis stays open and is the caller's to close.
func (c *Client) Close() error {
	if c.owned {
		return c.rdb.Close()
	}
	return nil
}

// Ping checks that the server answers.
func (c *Client) Ping(ctx context.Context) error {
	return convertErr(c.rdb.Ping(ctx).Err())
}

// spec is one command: its arguments and how to read its reply. err, if
// set, is a mistake found before sending (an attribute map that cannot be
// encoded as JSON, say): nothing is sent.
type spec[T any] struct {
	args  []any
	parse func(any) (T, error)
	err   error
}

// doer sends one command: a go-redis client or pipeline.
type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// run sends s on rdb and parses its reply.
func run[T any](ctx context.Context, rdb doer, s spec[T]) (T, error) {
	if s.err != nil {
		var zero T
		return zero, s.err
	}
	return result(rdb.Do(ctx, s.args...), s.parse)
}

// result reads a go-redis command's reply with parse, turning server
// errors into *Error. A null reply (redis.Nil) is passed to parse as nil.
func result[T any](cmd *redis.Cmd, parse func(any) (T, error)) (T, error) {
	v, err := cmd.Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		var zero T
		return zero, convertErr(err)
	}
	return parse(v)
}
