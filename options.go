package semaphore

// An Option configures a Semaphore at construction. Options are applied in order;
// a later one overrides an earlier one of the same kind.
type Option func(*config)

// config holds what the options set; New copies it into the Semaphore.
type config struct {
	name          string
	maxWaiters    int  // -1: unbounded
	badMaxWaiters bool // WithMaxWaiters was given a negative value; New panics

	observer Observer    // WithObserver; nil: none
	tracking trackConfig // WithHolderTracking, WithAcquireStacks, WithLeakDetection, WithWatchdog
}

// WithName names the semaphore. The name appears in every error and panic message,
// in String and in Stats, so a log line says which limit was hit.
func WithName(name string) Option {
	return func(c *config) { c.name = name }
}

// WithMaxWaiters bounds the wait list: a call that would become waiter number m+1
// fails at once with an error matching ErrQueueFull instead of queuing. This is load
// shedding: when the queue is already long, a new request would wait longer than it
// is worth, so it is better refused now. m = 0 allows no waiting at all (every call
// that cannot be granted at once fails). New panics if m < 0. Without this option
// the wait list is unbounded.
func WithMaxWaiters(m int) Option {
	return func(c *config) { c.maxWaiters, c.badMaxWaiters = m, m < 0 }
}
