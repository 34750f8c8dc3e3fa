package polylimit

import (
	"context"
	"errors"
	"fmt"
	"syscall"
)

// ErrCode is a polylimit status code: the negative polylimit_status values of
// polylimit.h. Each code is itself an error, so it doubles as the sentinel for
// errors.Is:
//
//	if errors.Is(err, polylimit.ErrTimeout) { retry later }
type ErrCode int

// The codes, with the same values as POLYLIMIT_E* in polylimit.h. A code the binding
// does not know (from a newer library) matches ErrInternal, as the C ABI asks.
const (
	ErrInternal        ErrCode = -1  // POLYLIMIT_ERROR: internal error; not retryable
	ErrInvalidArgument ErrCode = -2  // POLYLIMIT_EINVALID: bad argument; fix the call
	ErrUnavailable     ErrCode = -3  // POLYLIMIT_EUNAVAILABLE: cannot connect or connection broke; retry later
	ErrTimeout         ErrCode = -4  // POLYLIMIT_ETIMEOUT: the server did not answer in time; retry later
	ErrAuth            ErrCode = -5  // POLYLIMIT_EAUTH: authentication failed
	ErrPermission      ErrCode = -6  // POLYLIMIT_EPERM: ACL denied a command or key
	ErrScript          ErrCode = -7  // POLYLIMIT_ESCRIPT: the Lua script failed inside Redis
	ErrPoolExhausted   ErrCode = -8  // POLYLIMIT_EPOOL: no pooled connection became free in time; retry later
	ErrNoMemory        ErrCode = -9  // POLYLIMIT_ENOMEM: out of memory, here or in Redis
	ErrServer          ErrCode = -10 // POLYLIMIT_ESERVER: unexpected error or reply from the server
	ErrClosed          ErrCode = -11 // POLYLIMIT_ECLOSED: the client or limiter was closed
)

var codeInfo = map[ErrCode]struct{ name, text string }{
	ErrInternal:        {"POLYLIMIT_ERROR", "internal error"},
	ErrInvalidArgument: {"POLYLIMIT_EINVALID", "invalid argument"},
	ErrUnavailable:     {"POLYLIMIT_EUNAVAILABLE", "server unavailable"},
	ErrTimeout:         {"POLYLIMIT_ETIMEOUT", "timed out"},
	ErrAuth:            {"POLYLIMIT_EAUTH", "authentication failed"},
	ErrPermission:      {"POLYLIMIT_EPERM", "permission denied"},
	ErrScript:          {"POLYLIMIT_ESCRIPT", "script error"},
	ErrPoolExhausted:   {"POLYLIMIT_EPOOL", "connection pool exhausted"},
	ErrNoMemory:        {"POLYLIMIT_ENOMEM", "out of memory"},
	ErrServer:          {"POLYLIMIT_ESERVER", "unexpected server reply"},
	ErrClosed:          {"POLYLIMIT_ECLOSED", "closed"},
}

// known folds codes this binding does not know into ErrInternal.
func (c ErrCode) known() ErrCode {
	if _, ok := codeInfo[c]; ok {
		return c
	}
	return ErrInternal
}

// String returns the C constant name, e.g. "POLYLIMIT_ETIMEOUT".
func (c ErrCode) String() string {
	if info, ok := codeInfo[c]; ok {
		return info.name
	}
	return fmt.Sprintf("POLYLIMIT_UNKNOWN(%d)", int(c))
}

// Error describes the code in words.
func (c ErrCode) Error() string {
	if info, ok := codeInfo[c]; ok {
		return "polylimit: " + info.text
	}
	return fmt.Sprintf("polylimit: unknown error code %d", int(c))
}

// describe is the code's text without the "polylimit: " prefix.
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
	return "polylimit: " + msg
}

// Is makes errors.Is(err, polylimit.ErrTimeout) and errors.Is(err,
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

func (e *ContextError) Error() string { return "polylimit: " + e.Op + ": " + e.Err.Error() }
func (e *ContextError) Unwrap() error { return e.Err }

// Is lets a missed deadline count as a timeout for callers that only check
// ErrTimeout.
func (e *ContextError) Is(target error) bool {
	return target == ErrTimeout && errors.Is(e.Err, context.DeadlineExceeded)
}
