//go:build !cgo
// +build !cgo

package polylimit_test

import (
	"errors"
	"testing"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

func TestOpenWithoutCgo(t *testing.T) {
	c, err := polylimit.Open("memory://")
	if c != nil || !errors.Is(err, polylimit.ErrInternal) {
		t.Fatalf("Open without cgo = %v, %v; want nil, ErrInternal", c, err)
	}
}
