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

//go:generate python3 ../../capi/vocabulary/generate.py go

// The codes themselves (ErrInternal, ErrInvalidArgument, ... ErrClosed), their
// names and texts are generated from capi/vocabulary/vocabulary.json into
// vocabulary_gen.go, with the same values as POLYLIMIT_E* in polylimit.h.

// known folds codes this binding does not know into ErrInternal, as the C ABI
// asks.
func (c ErrCode) known() ErrCode {
	if _, ok := codeInfos[c]; ok {
		return c
	}
	return ErrInternal
}

// String returns the C constant name, e.g. "POLYLIMIT_ETIMEOUT".
func (c ErrCode) String() string {
	if info, ok := codeInfos[c]; ok {
		return info.name
	}
	return fmt.Sprintf("POLYLIMIT_UNKNOWN(%d)", int(c))
}

// Error describes the code in words.
func (c ErrCode) Error() string {
	if info, ok := codeInfos[c]; ok {
		return "polylimit: " + info.text
	}
	return fmt.Sprintf("polylimit: unknown error code %d", int(c))
}

// Temporary reports whether retrying later may succeed.
func (c ErrCode) Temporary() bool { return codeInfos[c].retryable }

// Error is what every failing call of this package returns (apart from
// context errors): the status code, the errno of the failing system call (0
// if none) and the library's message, which names the argument or the cause.
//
// OutcomeUnknown is true when the call failed after its command was sent to
// Redis (a timeout waiting for the reply, a connection lost after the send):
// the script may have run and consumed units. It is false when the call
// failed before the send or Redis answered with an error (the script did not
// run). See OutcomeUnknown and docs/error-model.md.
type Error struct {
	Code           ErrCode
	Errno          syscall.Errno
	Msg            string
	OutcomeUnknown bool
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

	abandoned bool // a call was running when the context ended (see OutcomeUnknown)
}

func (e *ContextError) Error() string { return "polylimit: " + e.Op + ": " + e.Err.Error() }
func (e *ContextError) Unwrap() error { return e.Err }

// Is lets a missed deadline count as a timeout for callers that only check
// ErrTimeout.
func (e *ContextError) Is(target error) bool {
	return target == ErrTimeout && errors.Is(e.Err, context.DeadlineExceeded)
}

// OutcomeUnknown reports whether err (or an error it wraps) says that the
// failed call may still have consumed units in Redis: a *Error whose command
// was sent before it failed (a timeout waiting for the reply, a connection
// lost after the send), or a *ContextError for a call abandoned while it ran
// (it completes in the background). False for errors before the send
// (connection refused, pool exhausted, invalid arguments), for error replies
// (the script did not run), and for nil.
//
//	if polylimit.OutcomeUnknown(err) { the units may be spent: do not assume a refund }
func OutcomeUnknown(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.OutcomeUnknown
	}
	var c *ContextError
	if errors.As(err, &c) {
		return c.abandoned
	}
	return false
}
