package prom

import "fmt"

// An Option configures a collector.
type Option func(*config)

type config struct {
	buckets []float64
}

// DefaultBuckets are the wait-time histogram buckets, in seconds: from 100µs to
// 100s, by factors of about 3, since waits behind a semaphore span from a
// handoff to a stall.
var DefaultBuckets = []float64{0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30, 100}

// WithBuckets sets the upper bounds, in seconds, of the wait-time histogram
// buckets. They must be strictly increasing and not empty; the collector's
// constructor panics otherwise.
func WithBuckets(bounds ...float64) Option {
	return func(c *config) { c.buckets = bounds }
}

func newConfig(what string, opts []Option) config {
	c := config{buckets: DefaultBuckets}
	for _, o := range opts {
		o(&c)
	}
	if len(c.buckets) == 0 {
		panic(fmt.Sprintf("prom: %s: WithBuckets(): no buckets", what))
	}
	for i := 1; i < len(c.buckets); i++ {
		if c.buckets[i] <= c.buckets[i-1] {
			panic(fmt.Sprintf("prom: %s: WithBuckets(%v): bounds must increase", what, c.buckets))
		}
	}
	return c
}
