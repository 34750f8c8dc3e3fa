//go:build !cgo
// +build !cgo

package polylimit

// The package calls libpolylimit, a C library, through cgo: there is no pure
// Go fallback. Rather than compile into a package whose every call fails at
// run time, a build with CGO_ENABLED=0 stops here, at compile time, with an
// error that names the fix:
//
//	undefined: polylimit_requires_cgo_CGO_ENABLED_1
//
// Build with CGO_ENABLED=1 (the default for native builds when a C compiler
// is found; cross builds and some container images turn it off) and a C++
// compiler, which compiles the core from this module's sources (see
// README.md).
var _ = polylimit_requires_cgo_CGO_ENABLED_1
