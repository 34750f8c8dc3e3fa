//go:build cgo
// +build cgo

package polylimit

import "testing"

// The generated codes agree with the library loaded at run time, not only
// with the header this package was compiled against.
func TestStatusNamesMatchLibrary(t *testing.T) {
	for code, info := range codeInfos {
		if got := statusName(code); got != info.name {
			t.Errorf("code %d: library says %s, vocabulary_gen.go %s", int(code), got, info.name)
		}
	}
	if got := statusName(-99); got != "POLYLIMIT_UNKNOWN" {
		t.Errorf("unknown code: %s", got)
	}
}
