package amqpsem

import (
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// An Option configures New.
type Option func(*config)

// Wakeup is how a waiting Acquire learns that slots may have come free.
type Wakeup uint8

const (
	// WakeAuto uses broker events when the broker has the event exchange
	// (the rabbitmq_event_exchange plugin) and polling otherwise.
	WakeAuto Wakeup = iota
	// WakeEvents consumes the broker's queue.deleted and queue.created events
	// from the exchange amq.rabbitmq.event; New fails if it is missing.
	WakeEvents
	// WakePolling probes the slots again after a backoff (20ms doubling to 1s).
	WakePolling
)

func (w Wakeup) String() string {
	switch w {
	case WakeEvents:
		return "events"
	case WakePolling:
		return "polling"
	}
	return "auto"
}

type config struct {
	amqp      amqp.Config   // for both connections; Heartbeat is the heartbeat asked for
	margin    time.Duration // subtracted from the heartbeat timeout to decide loss; <0: default
	slots     int           // created if the semaphore has none, when hasSlots
	hasSlots  bool
	attempts  int           // TryAcquire's attempts after RESOURCE_LOCKED
	skew      time.Duration // the bound of the random pause between attempts
	overshoot int           // A queues past the maximum that administration deletes
	wakeup    Wakeup
	// A waiter without events walks again after a backoff from pollMin,
	// doubling to pollMax (pollMin and pollMax in New; tests set others).
	pollMin, pollMax time.Duration
}

func defaultConfig() config {
	return config{
		amqp:      amqp.Config{Heartbeat: 10 * time.Second, Properties: amqp.Table{"connection_name": "amqpsem"}},
		margin:    -1,
		attempts:  5,
		skew:      20 * time.Millisecond,
		overshoot: 8,
		pollMin:   pollMin,
		pollMax:   pollMax,
	}
}

// WithConfig sets the amqp091 configuration of the handle's connections (TLS,
// SASL, virtual host, dialer). Its Heartbeat, if zero, is set to 10s: the
// loss detection needs heartbeats (see WithHeartbeat).
func WithConfig(c amqp.Config) Option {
	return func(cfg *config) {
		hb := cfg.amqp.Heartbeat
		cfg.amqp = c
		if cfg.amqp.Heartbeat <= 0 {
			cfg.amqp.Heartbeat = hb
		}
	}
}

// WithHeartbeat sets the heartbeat timeout asked of the broker (default 10s,
// whole seconds; the broker may lower it to its own setting). A holder that
// crashes without its connection closing keeps its slots until the broker
// misses its heartbeats (one to three timeouts); a holder cut off learns it
// lost them one timeout, less the safety margin, after the send of its last
// request the broker answered.
func WithHeartbeat(d time.Duration) Option {
	if d < time.Second {
		panic(fmt.Sprintf("amqpsem: WithHeartbeat(%v): the heartbeat must be at least 1s", d))
	}
	return func(c *config) { c.amqp.Heartbeat = d.Round(time.Second) }
}

// WithSafetyMargin sets how long before the broker could close a silent
// connection its holders are told their units are lost (default a tenth of
// the heartbeat timeout, at least 500ms). It covers a late timer and the
// difference in clock rate between the client and the broker.
func WithSafetyMargin(d time.Duration) Option {
	if d < 0 {
		panic(fmt.Sprintf("amqpsem: WithSafetyMargin(%v): the margin must not be negative", d))
	}
	return func(c *config) { c.margin = d }
}

// WithSlots makes New create the semaphore with n slots if it has none (no A
// queue for slot 1). An existing semaphore is left as it is: use Resize,
// AddSlots or RemoveSlots to change it.
func WithSlots(n int) Option {
	checkSlots("WithSlots", n)
	return func(c *config) { c.slots, c.hasSlots = n, true }
}

// WithAttempts sets how many times TryAcquire walks the slots when another
// client declares the holder queue it chose first (RESOURCE_LOCKED), before
// it fails with ErrContended (default 5), and the bound of the random pause
// before each new walk (default 20ms).
func WithAttempts(n int, skew time.Duration) Option {
	if n < 1 || skew < 0 {
		panic(fmt.Sprintf("amqpsem: WithAttempts(%d, %v): want at least 1 attempt and a skew not negative", n, skew))
	}
	return func(c *config) { c.attempts, c.skew = n, skew }
}

// WithOvershoot sets how many A queues past the maximum administration
// deletes, and how far past it Stats looks for holders of removed slots
// (default 8).
func WithOvershoot(t int) Option {
	if t < 0 || t > MaxSlots {
		panic(fmt.Sprintf("amqpsem: WithOvershoot(%d): out of range [0, %d]", t, MaxSlots))
	}
	return func(c *config) { c.overshoot = t }
}

// WithWakeup chooses how a waiting Acquire learns that slots came free
// (default WakeAuto).
func WithWakeup(w Wakeup) Option {
	return func(c *config) { c.wakeup = w }
}

// checkSlots panics on a slot count out of range: a programmer error.
func checkSlots(op string, n int) {
	if n < 0 || n > MaxSlots {
		panic(fmt.Sprintf("amqpsem: %s(%d): slots out of range [0, %d]", op, n, MaxSlots))
	}
}
