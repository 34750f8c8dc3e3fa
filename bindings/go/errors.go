package redlimit

import (
	"context"
	"errors"
	"fmt"
	"syscall"
)

// ErrCode is a redlimit status code: the negative rl_status values of
// redlimit.h. Each code is itself an error, so it doubles as the sentinel for
// errors.Is:
//
//	if errors.Is(err, redlimit.ErrTimeout) { retry later }
type ErrCode int

// The codes, with the same values as RL_E* in redlimit.h. A code the binding
// does not know (from a newer library) matches ErrInternal, as the C ABI asks.
const (
	ErrInternal        ErrCode = -1  // RL_ERROR: internal error; not retryable
	ErrInvalidArgument ErrCode = -2  // RL_EINVALID: bad argument; fix the call
	ErrUnavailable     ErrCode = -3  // RL_EUNAVAILABLE: cannot connect or connection broke; retry later
	ErrTimeout         ErrCode = -4  // RL_ETIMEOUT: the server did not answer in time; retry later
	ErrAuth            ErrCode = -5  // RL_EAUTH: authentication failed
	ErrPermission      ErrCode = -6  // RL_EPERM: ACL denied a command or key
	ErrScript          ErrCode = -7  // RL_ESCRIPT: the Lua script failed inside Redis
	ErrPoolExhausted   ErrCode = -8  // RL_EPOOL: no pooled connection became free in time; retry later
	ErrNoMemory        ErrCode = -9  // RL_ENOMEM: out of memory, here or in Redis
	ErrServer          ErrCode = -10 // RL_ESERVER: unexpected error or reply from the server
	ErrClosed          ErrCode = -11 // RL_ECLOSED: the client or limiter was closed
)

var codeInfo = map[ErrCode]struct{ name, text string }{
	ErrInternal:        {"RL_ERROR", "internal error"},
	ErrInvalidArgument: {"RL_EINVALID", "invalid argument"},
	ErrUnavailable:     {"RL_EUNAVAILABLE", "server unavailable"},
	ErrTimeout:         {"RL_ETIMEOUT", "timed out"},
	ErrAuth:            {"RL_EAUTH", "authentication failed"},
	ErrPermission:      {"RL_EPERM", "permission denied"},
	ErrScript:          {"RL_ESCRIPT", "script error"},
	ErrPoolExhausted:   {"RL_EPOOL", "connection pool exhausted"},
	ErrNoMemory:        {"RL_ENOMEM", "out of memory"},
	ErrServer:          {"RL_ESERVER", "unexpected server reply"},
	ErrClosed:          {"RL_ECLOSED", "closed"},
}

// known folds codes this binding does not know into ErrInternal.
func (c ErrCode) known() ErrCode {
	if _, ok := codeInfo[c]; ok {
		return c
	}
	return ErrInternal
}

// String returns the C constant name, e.g. "RL_ETIMEOUT".
func (c ErrCode) String() string {
	if info, ok := codeInfo[c]; ok {
		return info.name
	}
	return fmt.Sprintf("RL_UNKNOWN(%d)", int(c))
}

// Error describes the code in words.
func (c ErrCode) Error() string {
	if info, ok := codeInfo[c]; ok {
		return "redlimit: " + info.text
	}
	return fmt.Sprintf("redlimit: unknown error code %d", int(c))
}

// describe is the code's text without the "redlimit: " prefix.
func (c ErrCode) describe() string {
	if info, ok := codeInfo[c]; ok {
		return info.text
	}
	return fmt.Sprintf("unknown error code %d", int(c))
}

// Temporary reports whether retrying later may succeed.
func (c ErrCode) Temporary() bool {
	switch c {
	case ErrUnavailable, ErrTimeout, ErrPoolExhausted:
		return true
	}
	return false
}

// Error is what every failing call of this package returns (apart from
// context errors): the status code, the errno of the failing system call (0
// if none) and the library's message, which names the argument or the cause.
type Error struct {
	Code  ErrCode
	Errno syscall.Errno
	Msg   string
}

func (e *Error) Error() string {
	msg := e.Msg
	if msg == "" {
		return e.Code.Error()
	}
	return "redlimit: " + msg
}

// Is makes errors.Is(err, redlimit.ErrTimeout) and errors.Is(err,
// syscall.ECONNREFUSED) work.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case ErrCode:
		return e.Code.known() == t
	case syscall.Errno:
		return e.Errno != 0 && e.Errno == t
	}
	return false
}

// Temporary reports whether retrying later may succeed.
func (e *Error) Temporary() bool { return e.Code.known().Temporary() }

func newError(code ErrCode, format string, args ...interface{}) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// ContextError is returned when the context ended while a call was waiting
// for Redis. It unwraps to ctx.Err(), so errors.Is(err,
// context.DeadlineExceeded) holds; a deadline also matches ErrTimeout.
//
// The abandoned call still runs to completion in the background and its
// result is dropped: Allow may have consumed units that nobody was told of.
type ContextError struct {
	Op  string
	Err error // context.Canceled or context.DeadlineExceeded
}

func (e *ContextError) Error() string { return "redlimit: " + e.Op + ": " + e.Err.Error() }
func (e *ContextError) Unwrap() error { return e.Err }

// Is lets a missed deadline count as a timeout for callers that only check
// ErrTimeout.
func (e *ContextError) Is(target error) bool {
	return target == ErrTimeout && errors.Is(e.Err, context.DeadlineExceeded)
}
