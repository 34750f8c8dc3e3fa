//go:build cgo && !polylimit_system && !polylimit_static
// +build cgo,!polylimit_system,!polylimit_static

// Package bundled compiles polylimit's C++ core and its C ABI into the Go
// program, from the sources in this module, as go-sqlite3 compiles SQLite:
// `go build` needs a C++17 compiler, the OpenSSL headers and libraries, and
// the hiredis headers (Debian: g++ libssl-dev libhiredis-dev), and no
// libpolylimit. The core takes only types and constants from hiredis
// (redisReply, REDIS_REPLY_*), so the program does not link libhiredis; a
// core that called into it would fail to link here, in the Go suite.
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
