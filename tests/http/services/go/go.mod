module github.com/polylimit/polylimit/tests/http/services/go

go 1.23.0

require github.com/polylimit/polylimit v0.0.0

// The binding from this checkout.
replace github.com/polylimit/polylimit => ../../../..
