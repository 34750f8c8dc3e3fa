//go:build cgo && polylimit_static
// +build cgo,polylimit_static

package polylimit

// go build -tags polylimit_static: link libpolylimit.a into the program, with
// OpenSSL and the C++ runtime, as the installed polylimit-static.pc lists
// them (the archive by its path: with libpolylimit.so next to it, -lpolylimit
// would pick the shared library, so "pkg-config --static polylimit" is not
// enough). The program then needs no libpolylimit at run time. See README.md.

/*
#cgo pkg-config: polylimit-static
*/
import "C"
