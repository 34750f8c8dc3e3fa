//go:build cgo
// +build cgo

package main

import (
	"bytes"
	"testing"
)

// The demo driver parses this output, so its shape is the contract.
func TestWorkerOutput(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"w", "memory://", "k", "5", "60000", "12", "go-1"}, &out, &errb)
	if code != 0 || out.String() != "go-1 admitted=5 attempts=12\n" || errb.Len() != 0 {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

func TestWorkerErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"w"}, 2},
		{[]string{"w", "memory://", "k", "x", "60000", "1", "n"}, 2},
		{[]string{"w", "memory://", "k", "0", "60000", "1", "n"}, 1},
		{[]string{"w", "nosuch://", "k", "1", "60000", "1", "n"}, 1},
	} {
		var out, errb bytes.Buffer
		if code := run(tc.args, &out, &errb); code != tc.code || out.Len() != 0 || errb.Len() == 0 {
			t.Errorf("%v: code %d, stdout %q, stderr %q", tc.args, code, out.String(), errb.String())
		}
	}
}
