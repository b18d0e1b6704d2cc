package adaptive

import (
	"context"

	"github.com/fairsem/semaphore/internal/shed"
)

// A Priority is how critical a call is: under overload a Limiter sheds
// Sheddable calls first and Critical calls last. A call says nothing unless
// its context carries a Priority (ContextWithPriority): the zero value is
// Default.
//
// The levels share the Limiter's one FIFO wait list: a Priority decides
// whether a call may join it, and for how long it may wait, never where it
// stands in it. See WithFloor for a level that must never be starved
// outright, and the package documentation for the rule.
type Priority uint8

const (
	// Default is a call that says nothing. It waits as its budget allows,
	// at most twice the standing-queue target while Sheddable calls are
	// being shed, and at most the target while the queue stands.
	Default = Priority(shed.Default)
	// Critical is shed last: only its budget bounds its wait.
	Critical = Priority(shed.Critical)
	// Sheddable is shed first: it waits at most the standing-queue target
	// (5ms by default), whether the queue stands or not.
	Sheddable = Priority(shed.Sheddable)
)

// String returns "critical", "default" or "sheddable".
func (p Priority) String() string { return shed.Level(p).String() }

// valid reports whether p is one of the three levels.
func (p Priority) valid() bool { return p < Priority(shed.Levels) }

type priorityKey struct{}

// ContextWithPriority returns ctx carrying p, for the Limiter's Acquire, Do
// and the doors over a Limiter (httpsem.Adaptive, grpcsem.Adaptive). It
// panics if p is not one of the three levels.
func ContextWithPriority(ctx context.Context, p Priority) context.Context {
	if !p.valid() {
		panic("adaptive: ContextWithPriority(" + p.String() + "): not a Priority")
	}
	return context.WithValue(ctx, priorityKey{}, p)
}

// PriorityFrom returns the Priority ctx carries, Default if none.
func PriorityFrom(ctx context.Context) Priority {
	p, _ := ctx.Value(priorityKey{}).(Priority)
	return p
}
