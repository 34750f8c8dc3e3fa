//go:build !cgo
// +build !cgo

package redlimit_test

import (
	"errors"
	"testing"

	redlimit "github.com/redlimit/redlimit/bindings/go"
)

func TestOpenWithoutCgo(t *testing.T) {
	c, err := redlimit.Open("memory://")
	if c != nil || !errors.Is(err, redlimit.ErrInternal) {
		t.Fatalf("Open without cgo = %v, %v; want nil, ErrInternal", c, err)
	}
}
