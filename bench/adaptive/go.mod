module github.com/fairsem/semaphore/bench/adaptive

go 1.25

require (
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/fairsem/semaphore v0.0.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
)

replace github.com/fairsem/semaphore => ../..
