module github.com/polylimit/polylimit/examples/go-http

go 1.23.0

require github.com/polylimit/polylimit v0.0.0

// The binding from this checkout. In a program of your own, drop this line
// and require a released version instead.
replace github.com/polylimit/polylimit => ../..
