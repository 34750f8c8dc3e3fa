module github.com/polylimit/polylimit

go 1.19
