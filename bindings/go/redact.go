//go:build cgo
// +build cgo

package polylimit

/*
#include <stdlib.h>
#include <polylimit.h>
*/
import "C"

import (
	"strings"
	"unsafe"
)

// RedactURL returns url with every password replaced by "***"
// ("redis://user:***@host", "sentinel_password=***"), by the library's one
// redaction (polylimit_redact_url): what every error message of this package
// and Client.String show. Any string is accepted; one that does not parse is
// redacted too, hiding more when in doubt.
func RedactURL(url string) string {
	// A NUL would end the C string early: the redaction sees all of it.
	curl := C.CString(strings.ReplaceAll(url, "\x00", " "))
	defer C.free(unsafe.Pointer(curl))
	var out *C.char
	var n C.size_t
	var cerr C.polylimit_error
	if st := C.polylimit_redact_url(curl, &out, &n, &cerr); st != C.POLYLIMIT_OK {
		return "***" // out of memory: show nothing rather than the URL
	}
	defer C.polylimit_free(unsafe.Pointer(out))
	return C.GoStringN(out, C.int(n))
}

// String describes the client by its URL, redacted (RedactURL), and its
// name: "polylimit.Client(redis://user:***@host:6379 name=api)".
func (c *Client) String() string {
	s := "polylimit.Client(" + c.shown
	if c.name != "" {
		s += " name=" + c.name
	}
	c.mu.RLock()
	closed := c.h == nil
	c.mu.RUnlock()
	if closed {
		s += " closed"
	}
	return s + ")"
}
