module github.com/redlimit/redlimit/bindings/go

go 1.19
