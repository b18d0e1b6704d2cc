package shed_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fairsem/semaphore/internal/shed"
)

func TestExpectedWait_UnitsThatMustComeBackAtTheRateOfTheUnitsInFlight(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name string
		r    shed.Readings
		n    int64
		want time.Duration
		ok   bool
	}{
		{"nothing measured", shed.Readings{Limit: 4, InFlight: 4, Ahead: 3}, 1, 0, false},
		{"units free, nobody ahead", shed.Readings{Limit: 4, Available: 2, InFlight: 2, RTT: 10 * ms}, 1, 0, true},
		{"one unit back, at 4 per round trip", shed.Readings{Limit: 4, InFlight: 4, RTT: 10 * ms}, 1, 2500 * time.Microsecond, true},
		{"units ahead count", shed.Readings{Limit: 4, InFlight: 4, Ahead: 3, RTT: 10 * ms}, 1, 10 * ms, true},
		{"the caller's weight counts", shed.Readings{Limit: 4, InFlight: 4, Ahead: 3, RTT: 10 * ms}, 2, 12500 * time.Microsecond, true},
		{"after a shrink, the excess comes back first", shed.Readings{Limit: 2, InFlight: 6, RTT: 12 * ms}, 1, 10 * ms, true},
		{"units held by others: the semaphore's free units tell", shed.Readings{Limit: 4, InFlight: 1, Available: 0, RTT: 10 * ms}, 1, 2500 * time.Microsecond, true},
		{"no overflow", shed.Readings{Limit: 1, InFlight: 1, Ahead: 1 << 44, RTT: time.Hour}, 1, math.MaxInt64, true},
	} {
		got, ok := shed.ExpectedWait(tc.r, tc.n)
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
}

func TestDecide_EachBoundAndItsRefusal(t *testing.T) {
	ms := time.Millisecond
	now := time.Unix(1000, 0)
	full := shed.Readings{Limit: 2, InFlight: 2, Ahead: 2, RTT: 10 * ms} // 15ms expected for one unit
	cfg := shed.DefaultConfig()
	off := cfg
	off.Off = true
	always := cfg
	always.Always = true
	floor := cfg
	floor.Floors[shed.Sheddable] = 0.5
	for _, tc := range []struct {
		name   string
		cfg    shed.Config
		lv     shed.Level
		b      shed.Budget
		r      shed.Readings
		bound  shed.Bound
		wait   time.Duration
		refuse bool
	}{
		{"no budget: no bound", cfg, shed.Default, shed.Budget{}, full, shed.Unbounded, shed.Forever, false},
		{"deadline covers wait and round trip", cfg, shed.Default, shed.Budget{Deadline: now.Add(30 * ms)}, full, shed.DeadlineBound, 20 * ms, false},
		{"deadline does not", cfg, shed.Default, shed.Budget{Deadline: now.Add(24 * ms)}, full, shed.DeadlineBound, 14 * ms, true},
		{"deadline within the round trip", cfg, shed.Default, shed.Budget{Deadline: now.Add(9 * ms)}, full, shed.DeadlineBound, -ms, true},
		{"wait budget covers the wait", cfg, shed.Default, shed.Budget{WaitUntil: now.Add(15 * ms)}, full, shed.WaitBudget, 15 * ms, false},
		{"wait budget does not", cfg, shed.Default, shed.Budget{WaitUntil: now.Add(14 * ms)}, full, shed.WaitBudget, 14 * ms, true},
		{"rule off: the wait budget bounds, never refuses", off, shed.Default, shed.Budget{WaitUntil: now.Add(1 * ms), Deadline: now.Add(ms)}, full, shed.WaitBudget, ms, false},
		{"rule off: a deadline is the context's", off, shed.Default, shed.Budget{Deadline: now.Add(ms)}, full, shed.Unbounded, shed.Forever, false},
		{"sheddable: the target, always", off, shed.Sheddable, shed.Budget{}, full, shed.LevelCap, 5 * ms, true},
		{"sheddable under its floor", floor, shed.Sheddable, shed.Budget{}, full, shed.Unbounded, shed.Forever, false},
		{"sheddable past its floor", floor, shed.Sheddable, shed.Budget{}, shed.Readings{Limit: 2, InFlight: 2, Ahead: 2, RTT: 10 * ms, LevelUse: 1}, shed.LevelCap, 5 * ms, true},
		{"default in a standing queue, with a budget", cfg, shed.Default, shed.Budget{Deadline: now.Add(time.Second)}, withStanding(full), shed.LevelCap, 5 * ms, true},
		{"default in a standing queue, without", cfg, shed.Default, shed.Budget{}, withStanding(full), shed.Unbounded, shed.Forever, false},
		{"default in a standing queue, drained for all", always, shed.Default, shed.Budget{}, withStanding(full), shed.LevelCap, 5 * ms, true},
		{"default while sheddable calls are shed", cfg, shed.Default, shed.Budget{}, withShedding(full), shed.LevelCap, 10 * ms, true},
		{"critical: its budget alone", always, shed.Critical, shed.Budget{}, withShedding(withStanding(full)), shed.Unbounded, shed.Forever, false},
		{"nothing measured: only bounds", cfg, shed.Sheddable, shed.Budget{}, shed.Readings{Limit: 2, InFlight: 2, Ahead: 100}, shed.LevelCap, 5 * ms, false},
	} {
		d := tc.cfg.Decide(now, tc.lv, 1, tc.b, tc.r)
		assert.Equal(t, tc.bound, d.Bound, tc.name)
		assert.Equal(t, tc.wait, d.Wait, tc.name)
		assert.Equal(t, tc.refuse, d.Refuse != "", "%s: %q", tc.name, d.Refuse)
	}
}

func withStanding(r shed.Readings) shed.Readings { r.Standing = true; return r }
func withShedding(r shed.Readings) shed.Readings { r.Shedding = true; return r }

func TestLevel_String(t *testing.T) {
	assert.Equal(t, []string{"default", "critical", "sheddable", "Level(3)"},
		[]string{shed.Default.String(), shed.Critical.String(), shed.Sheddable.String(), shed.Levels.String()})
}
