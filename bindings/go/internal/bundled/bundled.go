//go:build cgo && !polylimit_system && !polylimit_static
// +build cgo,!polylimit_system,!polylimit_static

// Package bundled compiles polylimit's C++ core and its C ABI into the Go
// program, from the sources in this module, as go-sqlite3 compiles SQLite:
// `go build` needs a C++17 compiler and the OpenSSL headers and libraries
// (Debian: g++ libssl-dev), and no libpolylimit. The core parses Redis
// replies itself and needs nothing of hiredis: tests/go/consumer.sh builds a
// user's module with hiredis's headers and libraries hidden.
// Package polylimit imports this one for its side effect; the C++ files
// beside this one are written by gen (go generate).
//
// The core sits in a package of its own so that editing the binding's Go
// code does not compile the core again: the go build cache keys a package
// by all of its files, and the C++ files are compiled with the Go ones.
//
// The flags are those of the CMake build of libpolylimit.a
// (RelWithDebInfo: cgo's default -O2 -g, plus -DNDEBUG): C++17, hidden
// visibility, POLYLIMIT_BUILDING_LIBRARY and POLYLIMIT_STATIC for the C
// ABI.
package bundled

/*
#cgo CPPFLAGS: -I${SRCDIR}/generated -I${SRCDIR}/../../../../core/include -I${SRCDIR}/../../../../core/src
#cgo CPPFLAGS: -I${SRCDIR}/../../../../capi/include -DNDEBUG -DPOLYLIMIT_BUILDING_LIBRARY -DPOLYLIMIT_STATIC
#cgo CXXFLAGS: -std=c++17 -fvisibility=hidden -fvisibility-inlines-hidden
#cgo LDFLAGS: -lssl -lcrypto
*/
import "C"

//go:generate go run ./gen
