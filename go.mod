module github.com/polylimit/polylimit

// Go 1.23 or newer: client_golang's floor.
go 1.23.0

// For package bindings/go/promcollector only: the binding and httplimit use
// the standard library alone. Module graph pruning (go >= 1.17 on both
// sides) keeps these out of a program that does not import promcollector: it
// neither downloads nor compiles them (tests/go/consumer.sh checks it).
require (
	github.com/prometheus/client_golang v1.23.2
	github.com/prometheus/client_model v0.6.2
	github.com/prometheus/common v0.66.1
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/procfs v0.16.1 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/sys v0.35.0 // indirect
	google.golang.org/protobuf v1.36.8 // indirect
)
