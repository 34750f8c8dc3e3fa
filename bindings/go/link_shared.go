//go:build cgo && polylimit_system && !polylimit_static
// +build cgo,polylimit_system,!polylimit_static

package polylimit

// go build -tags polylimit_system: link the installed shared
// libpolylimit.so.1, found by pkg-config (polylimit.pc), instead of
// compiling the core (link_bundled.go); it must be on the loader's path at
// run time. The build tag polylimit_static selects link_static.go instead.
//
// The #cgo lines live in files of their own, chosen by build tags, rather
// than as "#cgo polylimit_static pkg-config: ..." in polylimit.go: the go
// build cache keys a package by its files and their contents, not by the
// pkg-config packages a tag selects, so one file for both would let a cached
// shared build answer a static one (and the other way round).

/*
#cgo pkg-config: polylimit
*/
import "C"
