package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Authentication.
//
// With no users configured (Config.Users empty) every connection is the
// default user with full access, as on a Redis server without requirepass;
// Serve then refuses to listen beyond loopback unless protected mode is off
// (see protected.go). With users configured, a connection starts
// unauthenticated: it may send only commands flagged NoAuth (AUTH, HELLO,
// PING, QUIT), each within the tighter PreAuthLimits, and every other
// command gets "-NOAUTH Authentication required.". AUTH or HELLO ... AUTH
// with a matching name and password makes it that user; a read-only user
// then gets "-NOPERM" for every command not flagged ReadOnly. Failed
// attempts are throttled per connection and server-wide (auth_throttle.go).

// DefaultUser is the user "AUTH password" (without a user name)
// authenticates as; --requirepass sets its password.
const DefaultUser = "default"

// User is an account a client can authenticate as.
type User struct {
	Name     string // 1-64 printable ASCII characters without spaces or ':'
	Password string // must not be empty
	// ReadOnly users may run only commands registered with ReadOnly.
	ReadOnly bool
}

// ParseUser parses the --user form "name:password:readonly|readwrite". The
// password is everything between the first and the last ':', so it may
// itself hold colons.
func ParseUser(s string) (User, error) {
	first, last := strings.IndexByte(s, ':'), strings.LastIndexByte(s, ':')
	if first < 0 || first == last {
		return User{}, fmt.Errorf("user %q: want name:password:readonly|readwrite", redact(s))
	}
	u := User{Name: s[:first], Password: s[first+1 : last]}
	switch s[last+1:] {
	case "readonly":
		u.ReadOnly = true
	case "readwrite":
	default:
		return User{}, fmt.Errorf("user %q: the access must be readonly or readwrite, not %q", redact(s), s[last+1:])
	}
	return u, u.validate()
}

// redact hides the password of a "name:password:access" string in errors.
func redact(s string) string {
	first, last := strings.IndexByte(s, ':'), strings.LastIndexByte(s, ':')
	if first < 0 || first == last {
		return "…"
	}
	return s[:first] + ":…" + s[last:]
}

func (u User) validate() error {
	if u.Name == "" || len(u.Name) > 64 || strings.ContainsRune(u.Name, ':') || !validClientString(u.Name) {
		return fmt.Errorf("user name %q: 1-64 printable characters without spaces or ':'", u.Name)
	}
	if u.Password == "" {
		return fmt.Errorf("user %q: the password is empty", u.Name)
	}
	return nil
}

// Authentication errors, as Redis words them (clients match on the code).
var (
	errNoAuth    = &ReplyError{Code: "NOAUTH", Msg: "Authentication required."}
	errWrongPass = &ReplyError{Code: "WRONGPASS", Msg: "invalid username-password pair or user is disabled."}
	errNoPass    = NewError("AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
)

func errNoPerm(user, cmd string) *ReplyError {
	return &ReplyError{Code: "NOPERM", Msg: "User " + user + " has no permissions to run the '" + cmd + "' command"}
}

// fullAccess is the user of every connection when no users are configured.
var fullAccess = &User{Name: DefaultUser}

// authenticator checks names and passwords. It is immutable after
// newAuthenticator, so connections use it without a lock.
type authenticator struct {
	users []authUser
}

type authUser struct {
	user User
	sum  [sha256.Size]byte // SHA-256 of the password
}

// ValidateUsers returns the error New would return for users: a bad name,
// an empty password, a name given twice. A command line checks it before
// opening anything.
func ValidateUsers(users []User) error {
	_, err := newAuthenticator(users)
	return err
}

// errDuplicateUser is returned by New's validation for a name given twice.
var errDuplicateUser = errors.New("server: a user name is configured twice")

func newAuthenticator(users []User) (*authenticator, error) {
	a := &authenticator{}
	for _, u := range users {
		if err := u.validate(); err != nil {
			return nil, err
		}
		for _, o := range a.users {
			if o.user.Name == u.Name {
				return nil, fmt.Errorf("%w: %q", errDuplicateUser, u.Name)
			}
		}
		a.users = append(a.users, authUser{user: u, sum: sha256.Sum256([]byte(u.Password))})
	}
	return a, nil
}

// required reports whether clients must authenticate.
func (a *authenticator) required() bool { return len(a.users) > 0 }

// check returns the user named name whose password is password, or nil.
//
// The time it takes does not depend on the password: both sides are
// hashed to a fixed length and compared with subtle.ConstantTimeCompare,
// and every user is compared, so neither a prefix match nor the length of
// the password shows in the timing.
func (a *authenticator) check(name, password []byte) *User {
	sum := sha256.Sum256(password)
	var found *User
	for i := range a.users {
		u := &a.users[i]
		ok := subtle.ConstantTimeCompare(sum[:], u.sum[:]) == 1
		if ok && string(name) == u.user.Name && found == nil {
			found = &u.user
		}
	}
	return found
}

// authenticate makes the connection user name if password matches. It
// switches the connection's Reader to the full request limits.
// REQUIRES: called by the connection's goroutine.
func (c *conn) authenticate(name, password []byte) error {
	a := c.srv.auth
	if !a.required() {
		// As on a Redis server without requirepass: the default user
		// has no password ("nopass"), so any password is accepted for
		// it; AUTH with no user name is an error.
		if string(name) == DefaultUser {
			return nil
		}
		return errWrongPass
	}
	u := a.check(name, password)
	if u == nil {
		c.srv.statAuthFailures.Add(1)
		c.authFailed() // auth_throttle.go
		c.srv.logAuthFailure(c, a.known(name))
		return errWrongPass
	}
	if err := c.srv.perUser.join(c, u.Name); err != nil { // userconns.go
		c.closeAfter = true
		return err
	}
	c.mu.Lock()
	c.user = u
	c.mu.Unlock()
	c.rd.SetLimits(c.srv.cfg.Limits)
	return nil
}

// allowed returns nil if the connection may run cmd, or the error to send.
// REQUIRES: called by the connection's goroutine.
func (c *conn) allowed(cmd *command) error {
	u := c.user
	switch {
	case u == nil && cmd.flags&NoAuth == 0:
		return errNoAuth
	case u != nil && u.ReadOnly && cmd.flags&ReadOnly == 0:
		return errNoPerm(u.Name, cmd.name)
	}
	return nil
}

// AUTH [username] password
func cmdAuth(c *Ctx, args [][]byte) error {
	switch len(args) {
	case 1:
		if !c.conn.srv.auth.required() {
			return errNoPass
		}
		return c.authReply(c.conn.authenticate([]byte(DefaultUser), args[0]))
	case 2:
		return c.authReply(c.conn.authenticate(args[0], args[1]))
	}
	return c.WrongArity()
}

func (c *Ctx) authReply(err error) error {
	if err != nil {
		return err
	}
	c.WriteOK()
	return nil
}

// known returns the configured user named name, or nil.
func (a *authenticator) known(name []byte) *User {
	for i := range a.users {
		if string(name) == a.users[i].user.Name {
			return &a.users[i].user
		}
	}
	return nil
}

// logAuthFailure logs a failed authentication, at most once a second: an
// unauthenticated client must not be able to flood the log (one line per
// 8 bytes it sends). The line says how many failures it stands for;
// INFO stats counts them all (auth_failures).
//
// The user-name field is logged only when it names a configured user
// (known non-nil): a client that typed its password there ("AUTH
// <password> <anything>") must not find it in the log, so any other
// name is logged as "(unknown)".
func (s *Server) logAuthFailure(c *conn, known *User) {
	now := time.Now().UnixNano()
	last := s.authLogLast.Load()
	if now-last < int64(time.Second) || !s.authLogLast.CompareAndSwap(last, now) {
		return
	}
	user := "(unknown)"
	if known != nil {
		user = known.Name
	}
	total := s.statAuthFailures.Load()
	since := total - s.authLogTotal.Swap(total)
	s.log.Warn("server: authentication failed", "client", c.id, "addr", c.nc.RemoteAddr(),
		"user", user, "user_known", known != nil, "failures_on_connection", c.throttle.failures,
		"connection_closed", c.closeAfter, "failures_since_last_line", since, "failures_total", total)
}
