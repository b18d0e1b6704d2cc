package group

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/fairsem/semaphore"
)

// A Group is a collection of tasks, each running on its own goroutine while it
// holds its weight in units of the group's semaphore. Create it with New or
// WithContext. All methods are safe for concurrent use.
type Group struct {
	// Fixed after New.
	sem    *semaphore.Semaphore
	cancel context.CancelCauseFunc // nil unless WithContext

	tasks sync.WaitGroup // Go calls in progress and tasks running

	mu       sync.Mutex
	err      error       // the first error a task returned; guarded by mu
	panicked *PanicError // the first panic of a task; guarded by mu
}

// New returns a group whose tasks take their units from s. It panics if s is nil.
func New(s *semaphore.Semaphore) *Group {
	if s == nil {
		panic("group: New(nil)")
	}
	return &Group{sem: s}
}

// WithContext returns a group whose tasks take their units from s, and a context
// derived from ctx that is canceled the first time a task returns an error or
// panics (with that error or *PanicError as its cause), or when Wait returns,
// whichever comes first. It panics if s is nil.
func WithContext(ctx context.Context, s *semaphore.Semaphore) (*Group, context.Context) {
	g := New(s)
	ctx, g.cancel = context.WithCancelCause(ctx)
	return g, ctx
}

// Go waits until n units of the group's semaphore are granted, in FIFO order
// behind earlier requests, then calls fn on a new goroutine that holds the units
// until fn returns, and returns nil. No goroutine exists for the task before its
// units are granted.
//
// If ctx ends or the semaphore is broken first, Go returns the semaphore's error
// (matching ctx.Err(), or semaphore.ErrBroken), fn is never called, and the
// error is not recorded for Wait. The same holds for the semaphore's other
// refusals: n larger than its capacity (semaphore.ErrTooLarge) and a full wait
// list (semaphore.ErrQueueFull).
//
// The first error fn returns is returned by Wait and, with WithContext, cancels
// the group's context. A panic in fn is recovered and re-raised by Wait. Go
// panics if fn is nil or n is negative.
func (g *Group) Go(ctx context.Context, n int64, fn func() error) error {
	if fn == nil {
		panic("group: Go with a nil function")
	}
	if n < 0 {
		// Checked here, not left to the semaphore: a panic after Add would
		// leave Wait waiting forever.
		panic("group: Go(" + strconv.FormatInt(n, 10) + " units): negative units")
	}
	g.tasks.Add(1) // before waiting, so that Wait also waits for this call
	if err := g.sem.Acquire(ctx, n); err != nil {
		g.tasks.Done()
		return err
	}
	go g.run(n, fn)
	return nil
}

// TryGo calls fn on a new goroutine holding n units of the group's semaphore if
// they can be taken at once (they are free and nobody waits ahead), and reports
// whether it did. It never blocks. It panics if fn is nil or n is negative.
func (g *Group) TryGo(n int64, fn func() error) bool {
	if fn == nil {
		panic("group: TryGo with a nil function")
	}
	if !g.sem.TryAcquire(n) {
		return false
	}
	g.tasks.Add(1)
	go g.run(n, fn)
	return true
}

// Wait blocks until every task has returned and every Go call has either
// started its task or failed, then returns the first error a task returned, or
// nil. With WithContext it cancels the group's context. If a task panicked, Wait
// panics with a *PanicError for the first panic instead of returning.
func (g *Group) Wait() error {
	g.tasks.Wait()
	g.mu.Lock()
	err, p := g.err, g.panicked
	g.mu.Unlock()
	if g.cancel != nil {
		if p != nil {
			g.cancel(p)
		} else {
			g.cancel(err)
		}
	}
	if p != nil {
		panic(p)
	}
	return err
}

// run is a task's goroutine: it runs fn, records how it ended, then gives the
// units back and only then marks the task done, so that when Wait returns every
// unit the group took is back.
func (g *Group) run(n int64, fn func() error) {
	defer g.tasks.Done()
	defer g.sem.Release(n)
	returned := false
	defer func() {
		if returned {
			return
		}
		// Not a normal return: a panic, or runtime.Goexit (recover returns nil).
		if v := recover(); v != nil {
			g.fail(nil, &PanicError{Value: v, Stack: debug.Stack()})
		}
	}()
	err := fn()
	returned = true
	if err != nil {
		g.fail(err, nil)
	}
}

// fail records a task's error or panic; the first failure of either kind
// cancels the group's context.
func (g *Group) fail(err error, p *PanicError) {
	g.mu.Lock()
	first := g.err == nil && g.panicked == nil
	if err != nil && g.err == nil {
		g.err = err
	}
	if p != nil && g.panicked == nil {
		g.panicked = p
	}
	g.mu.Unlock()
	if first && g.cancel != nil {
		if p != nil {
			g.cancel(p)
		} else {
			g.cancel(err)
		}
	}
}

// PanicError is the value Wait panics with when a task panicked: the value the
// task panicked with and the stack of its goroutine at that moment.
type PanicError struct {
	Value any
	Stack []byte
}

// Error describes the panic, with the task's stack.
func (p *PanicError) Error() string {
	return fmt.Sprintf("group: task panicked: %v\n\n%s", p.Value, p.Stack)
}

// Unwrap returns the panic value if it is an error, so that errors.Is and
// errors.As see through the panic.
func (p *PanicError) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}
