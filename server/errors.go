package server

import (
	"errors"
	"strings"
)

// ErrServerClosed is returned by Serve and ListenAndServe after Shutdown has
// been called. It is the normal way for Serve to return.
var ErrServerClosed = errors.New("server: closed")

// ProtocolError reports a malformed request frame. After a ProtocolError the
// byte stream cannot be resynchronised, so the server replies
// "-ERR Protocol error: <Msg>" and closes that connection (like Redis).
type ProtocolError struct {
	// Msg is the reason without the "Protocol error: " prefix, for example
	// "invalid bulk length".
	Msg string
}

// Error returns "Protocol error: " + Msg, the text Redis puts after "-ERR ".
func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

// ReplyError is an error a handler returns to send a specific Redis error
// reply. Code is the leading upper-case word of the reply ("ERR",
// "WRONGTYPE", "NOPROTO", ...); an empty Code means "ERR".
//
// A handler may return any error; errors that are not (and do not wrap) a
// *ReplyError are sent as "-ERR " + err.Error().
type ReplyError struct {
	Code string
	Msg  string
}

// Error returns the reply text without the leading '-'.
func (e *ReplyError) Error() string {
	code := e.Code
	if code == "" {
		code = "ERR"
	}
	return code + " " + e.Msg
}

// Reply errors shared by several commands.

// NewError returns a *ReplyError with code "ERR".
func NewError(msg string) *ReplyError { return &ReplyError{Code: "ERR", Msg: msg} }

// errWrongArity is the Redis text for a bad argument count.
func errWrongArity(name string) *ReplyError {
	return NewError("wrong number of arguments for '" + name + "' command")
}

// errSyntax is Redis's generic "syntax error".
var errSyntax = NewError("syntax error")

// errNotInteger is Redis's text for an argument that must be an integer.
var errNotInteger = NewError("value is not an integer or out of range")

// errUnknownSubcommand is Redis's text for an unknown CLIENT/CONFIG/...
// subcommand.
func errUnknownSubcommand(sub, cmd string) *ReplyError {
	return NewError("unknown subcommand '" + truncate(sub, 128) + "'. Try " + strings.ToUpper(cmd) + " HELP.")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// asReplyError finds a *ReplyError in err's chain.
func asReplyError(err error) (*ReplyError, bool) {
	var re *ReplyError
	if errors.As(err, &re) {
		return re, true
	}
	return nil, false
}
