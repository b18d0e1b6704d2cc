package etcdsem

import (
	"fmt"
	"time"
)

// An Option configures New.
type Option func(*config)

type config struct {
	ttl       time.Duration // lease TTL asked for; the server may raise it
	margin    time.Duration // subtracted from the lease's life to decide loss
	capacity  int64         // created if absent when hasCap
	hasCap    bool
	clientTag string // shown in Stats for this handle's keys
	blockSize int64  // block mode when positive (WithBlocks)
}

// WithTTL sets the TTL of the handle's lease (default 10s), rounded up to whole
// seconds as etcd requires. A holder that crashes keeps its units for at most
// this long; a holder that is cut off learns it lost them this long (minus the
// safety margin) after its last acknowledged renewal was sent.
func WithTTL(d time.Duration) Option {
	if d <= 0 {
		panic(fmt.Sprintf("etcdsem: WithTTL(%v): TTL must be positive", d))
	}
	return func(c *config) { c.ttl = d }
}

// WithSafetyMargin sets how long before the lease could expire on the server a
// holder considers its units lost (default a tenth of the TTL, at least 500ms).
// It must cover timer lateness on the holder and the clock rate difference
// between the holder and the cluster over one TTL.
func WithSafetyMargin(d time.Duration) Option {
	if d < 0 {
		panic(fmt.Sprintf("etcdsem: WithSafetyMargin(%v): margin must not be negative", d))
	}
	return func(c *config) { c.margin = d }
}

// WithCapacity makes New create the semaphore with capacity c if it does not
// exist yet. An existing capacity is left unchanged (use Resize to change it).
func WithCapacity(c int64) Option {
	checkUnits("WithCapacity", "capacity", c)
	return func(cfg *config) { cfg.capacity, cfg.hasCap = c, true }
}

// WithClientName labels this handle's keys and, in block mode, its report, so
// that Stats, semctl status and the debug page show which process holds or
// waits (default: the host name and process id).
func WithClientName(name string) Option {
	return func(c *config) { c.clientTag = name }
}
