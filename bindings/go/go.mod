module github.com/polylimit/polylimit/bindings/go

go 1.19
