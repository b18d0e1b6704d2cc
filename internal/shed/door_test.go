package shed_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fairsem/semaphore/internal/shed"
)

func TestBudgetOf_TheContextsDeadlineUnlessADoorGaveABudget(t *testing.T) {
	assert.Equal(t, shed.Budget{}, shed.BudgetOf(context.Background()))
	dl := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), dl)
	defer cancel()
	assert.Equal(t, shed.Budget{Deadline: dl}, shed.BudgetOf(ctx))

	wait := time.Now().Add(time.Minute)
	inner := shed.WithBudget(ctx, shed.Budget{WaitUntil: wait})
	assert.Equal(t, shed.Budget{WaitUntil: wait}, shed.BudgetOf(inner), "a door's budget is the whole story: its deadline is the caller's own")
	earlier := wait.Add(-time.Second)
	both := shed.WithBudget(inner, shed.Budget{Deadline: dl, WaitUntil: earlier.Add(2 * time.Second)})
	assert.Equal(t, shed.Budget{Deadline: dl, WaitUntil: wait}, shed.BudgetOf(both), "two doors: the earlier of each bound")
	assert.True(t, shed.Budget{WaitUntil: wait}.Known())
	assert.False(t, shed.Budget{}.Known())
}

func TestDoor_ObserveIsASmoothedMeanOfTheRoundTrips(t *testing.T) {
	var d shed.Door
	d.Init(shed.DefaultConfig())
	assert.Zero(t, d.RTT(), "unknown before the first")
	d.Observe(80 * time.Millisecond)
	assert.Equal(t, 80*time.Millisecond, d.RTT(), "the first is taken whole")
	d.Observe(16 * time.Millisecond)
	assert.Equal(t, 72*time.Millisecond, d.RTT(), "then an eighth of the difference")
	d.SetRTT(0)
	assert.Equal(t, time.Nanosecond, d.RTT(), "a measured round trip is never unknown again")
}

func TestDoor_InitPanicsOnAPolicyADoorCannotRun(t *testing.T) {
	var d shed.Door
	assert.Panics(t, func() { d.Init(shed.Config{}) })
	cfg := shed.DefaultConfig()
	cfg.Floors[shed.Critical] = 1.5
	assert.Panics(t, func() { d.Init(cfg) })
}
