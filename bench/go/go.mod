module github.com/polylimit/polylimit/bench/go

go 1.23.0

require (
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/polylimit/polylimit v0.0.0
	github.com/redis/go-redis/v9 v9.7.3
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
)

replace github.com/polylimit/polylimit => ../..
