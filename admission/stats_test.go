package admission_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/internal/statsline/statslinetest"
)

// Stats print with %v as one line in the words of the metrics and
// Diagnostics; a group's as a line of its own and one per member.
func TestStats_PrintAsOneLineInTheMetricsWords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(2, 1<<20), admission.WithName("reads"))
		p := mustAcquire(t, c, "get", 300<<10)
		w := start(t.Context(), c, "scan", 800<<10)
		assert.Equal(t, `admission "reads" count_limit=2 memory_limit=1024K count_held=1 memory_held=300K borrowed=0B broken=false`+
			` acquired=1 acquired_immediately=1 queued_for_admission=1 queued_for_memory=0 queued_because_count=0 queued_because_memory=1 queued_because_cpu=0`+
			` rejected=0 shed=0 timed_out=0 cancelled=0 killed=0 permit_evictions=0 time_evictions=0 total_permits=2`+
			` waiters=1 memory_waiters=0 inactive=0 current_permits=2 need_cpu_permits=0 awaiting_permits=0`, fmt.Sprint(c.Stats()))
		p.Release()
		r := <-w
		require.NoError(t, r.err)
		r.p.Release()
	})
}

func TestGroupStats_PrintTheGroupThenEachMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := admission.NewGroup(limits(10, 100<<20), admission.WithName("tenants"), admission.WithSharedPool(0.2))
		batch, web := g.Add("batch", 1), g.Add("web", 3)
		p := mustAcquire(t, batch, "scan", 30<<20) // share 20M: borrows 10M
		w := start(t.Context(), batch, "scan", 20<<20)
		got := fmt.Sprint(g.Stats())
		lines := strings.Split(got, "\n")
		require.Len(t, lines, 3, got)
		assert.Equal(t, `admission group "tenants" count=10 memory=100M pool=20M borrowed=10M bottleneck="batch" members=2`, lines[0])
		assert.True(t, strings.HasPrefix(lines[1], `  admission "batch" shares=1 removed=false count_limit=10 memory_limit=20M count_held=1 memory_held=30M borrowed=10M broken=false acquired=1 `), lines[1])
		assert.True(t, strings.HasPrefix(lines[2], `  admission "web" shares=3 removed=false count_limit=10 memory_limit=60M count_held=0 memory_held=0B borrowed=0B `), lines[2])
		assert.Equal(t, strings.TrimPrefix(lines[2], "  "), g.Stats().Members[1].String())
		p.Release()
		r := <-w
		require.NoError(t, r.err)
		r.p.Release()
		g.Remove(web)
		assert.Equal(t, `admission group "tenants" count=10 memory=100M pool=20M borrowed=0B bottleneck=none members=1`, strings.Split(g.Stats().String(), "\n")[0])
	})
}

func TestStats_StringNamesEveryField(t *testing.T) {
	st := admission.Stats{Name: "n", Broken: true, Limits: limits(1, 1), Held: limits(1, 1), Borrowed: 1, Acquired: 1, AcquiredImmediately: 1,
		QueuedForAdmission: 1, QueuedForMemory: 1, QueuedBecauseCount: 1, QueuedBecauseMemory: 1, QueuedBecauseCPU: 1, Rejected: 1, Shed: 1,
		TimedOut: 1, Cancelled: 1, Killed: 1, PermitEvictions: 1, TimeEvictions: 1, TotalPermits: 1, Waiters: 1, MemoryWaiters: 1,
		Inactive: 1, CurrentPermits: 1, NeedCPUPermits: 1, AwaitingPermits: 1}
	line := st.String()
	statslinetest.EveryField(t, st, line, map[string]string{"Limits": "count_limit", "Held": "count_held"})
	assert.Contains(t, line, " memory_limit=1B ")
	assert.Contains(t, line, " memory_held=1B ")

	m := admission.MemberStats{Shares: 1, Removed: true, Stats: st}
	statslinetest.EveryField(t, m, m.String(), map[string]string{"Stats": ""})
	assert.Equal(t, `admission "n" shares=1 removed=true `+strings.TrimPrefix(line, `admission "n" `), m.String())

	g := admission.GroupStats{Name: "g", Total: limits(1, 1), Pool: 1, Borrowed: 1, Bottleneck: "n", Members: []admission.MemberStats{m}}
	statslinetest.EveryField(t, g, g.String(), map[string]string{"Total": "count"})
}

func TestStats_StringQuotesHostileNames(t *testing.T) {
	for _, name := range []string{"a\nb", `<i>"x" shed=999</i>`, strings.Repeat("x", 5000), "\xff"} {
		g := admission.NewGroup(limits(1, 10), admission.WithName(name))
		g.Add(name, 1)
		st := g.Stats()
		st.Bottleneck = name
		got := st.String()
		lines := strings.Split(got, "\n")
		require.Len(t, lines, 2, "one line for the group and one for its member: %q", got)
		assert.True(t, strings.HasPrefix(lines[0], "admission group "+strconv.Quote(name)+" count=1 "), lines[0])
		assert.Contains(t, lines[0], " bottleneck="+strconv.Quote(name)+" ")
		assert.True(t, strings.HasPrefix(lines[1], "  admission "+strconv.Quote(name)+" shares=1 "), lines[1])
	}
}
