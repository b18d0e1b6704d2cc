package statslinetest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fairsem/semaphore/internal/statsline/statslinetest"
)

func TestSnake_SplitsWordsAndAcronyms(t *testing.T) {
	for in, want := range map[string]string{
		"Waiters":             "waiters",
		"TimedOut":            "timed_out",
		"AcquiredImmediately": "acquired_immediately",
		"NeedCPUPermits":      "need_cpu_permits",
		"QueuedBecauseCPU":    "queued_because_cpu",
		"InFlight":            "in_flight",
	} {
		assert.Equal(t, want, statslinetest.Snake(in))
	}
}

type stats struct {
	Name     string
	Waiters  int
	TimedOut uint64
	Limits   int
	hidden   int // not a field of the line
}

func TestEveryField_FailsOnAFieldMissingFromTheLine(t *testing.T) {
	ok := &recorder{}
	statslinetest.EveryField(ok, stats{hidden: 1}, `x "n" waiters=1 timed_out=2 count_limit=3`, map[string]string{"Limits": "count_limit"})
	assert.Empty(t, ok.errors)

	missing := &recorder{}
	statslinetest.EveryField(missing, stats{}, `x "n" waiters=1 count_limit=3`, map[string]string{"Limits": "count_limit"})
	assert.Len(t, missing.errors, 1)

	left := &recorder{}
	statslinetest.EveryField(left, stats{}, `x "n" waiters=1 timed_out=2`, map[string]string{"Limits": ""})
	assert.Empty(t, left.errors)
}

// recorder is a testing.TB that keeps the errors reported to it.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, format)
}
