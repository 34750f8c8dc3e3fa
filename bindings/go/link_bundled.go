//go:build cgo && !polylimit_system && !polylimit_static
// +build cgo,!polylimit_system,!polylimit_static

package polylimit

// The default: the C++ core and the C ABI are compiled from this module's
// sources by package internal/bundled and linked into the program, so
// `go build` needs no installed libpolylimit and the program none at run
// time (it needs OpenSSL, as libpolylimit does). The build tags
// polylimit_system and polylimit_static link an installed libpolylimit
// instead (link_shared.go, link_static.go).

/*
#cgo CPPFLAGS: -I${SRCDIR}/../../capi/include
*/
import "C"

import _ "github.com/polylimit/polylimit/bindings/go/internal/bundled"
