package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/hostile"
)

// above returns "diagnostics_test.go:N" for the line above the one it is called on.
func above() string {
	_, file, line, _ := runtime.Caller(1)
	return fmt.Sprintf("%s:%d", file[strings.LastIndexByte(file, '/')+1:], line-1)
}

func headline(s *semaphore.Semaphore) string {
	return strings.SplitN(s.Diagnostics(0), "\n", 2)[0]
}

func TestDiagnostics_HeadlineNamesHeadWaiterAndOldestHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(4, semaphore.WithName("db"), semaphore.WithHolderTracking())
		ctx := semaphore.ContextWithHolderLabel(context.Background(), "worker-1")
		u1, err := s.AcquireUnits(ctx, 2)
		site := above()
		require.NoError(t, err)
		time.Sleep(10 * time.Second)
		u2, err := s.AcquireUnits(context.Background(), 1)
		require.NoError(t, err)
		calls := queue(context.Background(), s, 4, 2)
		time.Sleep(2 * time.Second)

		dump := s.Diagnostics(0)
		lines := strings.Split(dump, "\n")
		assert.Equal(t, `semaphore "db": head waiter wants 4 units (waiting 2s), 1 available, `+
			`3 held by 2 holders for 12s (oldest: "worker-1" (`+site+`))`, lines[0], "dump:\n%s", dump)
		assert.Equal(t, "capacity 4, available 1, held 3, waiters 2 (6 units)", lines[1])
		assert.Contains(t, dump, "holders (2, 3 units), by site, oldest first:\n  holders  units  oldest    site\n")
		assert.Regexp(t, `\n  1 +2 +12s +"worker-1" \(diagnostics_test\.go:\d+\)\n  1 +1 +2s +diagnostics_test\.go:\d+\n`, dump,
			"groups oldest first, each with its holders, units and age")
		assert.Contains(t, dump, "waiters, head first:\n  position  units  waiting\n  1         4      2s\n  2         2      2s\n")
		u1.Release()
		u2.Release()
		synctest.Wait()
		require.Len(t, finished(calls), 1)
		s.Release(4)
		synctest.Wait()
		s.Release(2)
	})
}

func TestDiagnostics_SiteIsTheCallerOfEachAcquireForm(t *testing.T) {
	s := semaphore.New(10, semaphore.WithHolderTracking())
	check := func(site string) {
		t.Helper()
		assert.Contains(t, s.Diagnostics(0), site, "dump:\n%s", s.Diagnostics(0))
	}
	u, err := s.AcquireUnits(context.Background(), 1)
	check(above())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	u2, err := s.AcquireUnits(ctx, 1)
	check(above())
	require.NoError(t, err)
	u3, ok := s.TryAcquireUnits(1)
	check(above())
	require.True(t, ok)
	u4 := s.ConsumeUnits(1)
	check(above())
	u5, err := u4.Split(0)
	require.NoError(t, err)
	err = semaphore.WithSemaphore(context.Background(), s, 1, func(context.Context) error {
		assert.Regexp(t, `diagnostics_test\.go:\d+`, s.Diagnostics(0))
		assert.Contains(t, headline(s), "5 held by 5 holders")
		return nil
	})
	require.NoError(t, err)
	v, err := semaphore.WithSemaphoreValue(context.Background(), s, 2, func(context.Context) (string, error) {
		return headline(s), nil
	})
	require.NoError(t, err)
	assert.Contains(t, v, "6 held by 5 holders")
	for _, u := range []*semaphore.Units{u, u2, u3, u4, u5} {
		u.Release()
	}
	assert.Equal(t, "unnamed semaphore", headline(s)[:len("unnamed semaphore")])
	assert.Contains(t, headline(s), "no waiters, 10 of 10 available, 0 held")
}

func TestDiagnostics_FollowsReturnSplitAdoptAndDetach(t *testing.T) {
	s := semaphore.New(10, semaphore.WithHolderTracking())
	u, err := s.AcquireUnits(context.Background(), 6)
	require.NoError(t, err)
	require.NoError(t, u.Return(1))
	assert.Contains(t, headline(s), "5 held by 1 holder ")
	part, err := u.Split(2)
	require.NoError(t, err)
	assert.Contains(t, headline(s), "5 held by 2 holders")
	require.NoError(t, u.Adopt(part))
	assert.Contains(t, headline(s), "5 held by 1 holder ", "an emptied Units holds nothing and is not listed")
	n := u.Detach()
	assert.Equal(t, int64(5), n)
	assert.Contains(t, headline(s), "5 held outside Units", "detached units are held, by nobody tracked")
	s.Release(n)
	assert.Contains(t, headline(s), "10 of 10 available, 0 held")
}

func TestDiagnostics_CountsPlainAcquireOutsideUnits(t *testing.T) {
	s := semaphore.New(5, semaphore.WithHolderTracking())
	require.NoError(t, s.Acquire(context.Background(), 2))
	u, err := s.AcquireUnits(context.Background(), 1)
	require.NoError(t, err)
	defer u.Release()
	assert.Contains(t, headline(s), "3 held, 1 of them by 1 holder for ")
	s.Release(2)
}

func TestDiagnostics_WithoutTrackingSaysSo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(2, semaphore.WithName("db"))
		require.NoError(t, s.Acquire(context.Background(), 2))
		calls := queue(context.Background(), s, 1)
		dump := s.Diagnostics(0)
		assert.Equal(t, `semaphore "db": head waiter wants 1 unit, 0 available, 2 held (holders not tracked)`+"\n"+
			"capacity 2, available 0, held 2, waiters 1 (1 unit)\n"+
			"holders: not tracked (WithHolderTracking)\n"+
			"waiters, head first:\n  position  units  waiting\n  1         1      ?\n", dump)
		s.Release(2)
		synctest.Wait()
		require.Len(t, finished(calls), 1)
		s.Release(1)
	})
}

func TestDiagnostics_MaxLinesSumsTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(3, semaphore.WithHolderTracking())
		var held []*semaphore.Units
		for i := range 3 {
			u, err := s.AcquireUnits(semaphore.ContextWithHolderLabel(context.Background(), fmt.Sprint("w", i)), 1)
			require.NoError(t, err)
			held = append(held, u)
			time.Sleep(time.Second)
		}
		calls := queue(context.Background(), s, 1, 2, 3)
		dump := s.Diagnostics(1)
		assert.Regexp(t, `\n  1 +1 +3s +"w0" \(diagnostics_test\.go:\d+\)\n  2 +2 +\.\.\. +2 more sites\n`, dump)
		assert.Contains(t, dump, "  1         1      0s\n  2 more waiters, 5 units\n")
		assert.Equal(t, s.Diagnostics(0), s.Diagnostics(-1), "maxLines <= 0 means no limit")
		assert.Contains(t, s.Diagnostics(0), "  3         3      0s\n")
		for _, u := range held {
			u.Release()
		}
		synctest.Wait()
		require.Len(t, finished(calls), 2)
		s.Release(3)
		synctest.Wait()
		require.Len(t, finished(calls), 1)
		s.Release(3)
	})
}

func TestDiagnostics_BrokenHeadlineGivesTheCause(t *testing.T) {
	s := semaphore.New(2, semaphore.WithHolderTracking())
	u, err := s.AcquireUnits(context.Background(), 1)
	require.NoError(t, err)
	s.Break(errors.New("shutting down"))
	assert.Regexp(t, `: broken \("shutting down"\), 1 held by 1 holder for \S+ \(oldest: diagnostics_test\.go:\d+\)$`, headline(s))
	u.Release()
	assert.Contains(t, headline(s), `broken ("shutting down"), 0 held`)
}

// After Break the dump counts every unit that Drain waits for, those held outside
// Units included, as it does before Break.
func TestDiagnostics_AfterBreakCountsWhatDrainWaitsFor(t *testing.T) {
	for _, tracked := range []bool{false, true} {
		var opts []semaphore.Option
		if tracked {
			opts = append(opts, semaphore.WithHolderTracking())
		}
		s := semaphore.New(5, append(opts, semaphore.WithName("db"))...)
		require.NoError(t, s.Acquire(context.Background(), 2))
		u, err := s.AcquireUnits(context.Background(), 1)
		require.NoError(t, err)
		s.Break(errors.New("shutdown"))

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.ErrorContains(t, s.Drain(ctx), "3 units still out")
		dump := s.Diagnostics(0)
		first := strings.SplitN(dump, "\n", 2)[0]
		assert.Contains(t, first, "3 held", "tracked=%v: %s", tracked, dump)
		assert.Contains(t, dump, "held 3", "tracked=%v: %s", tracked, dump)
		if tracked {
			assert.Contains(t, first, "1 of them by 1 holder", dump)
		}
		u.Release()
		s.Release(2)
		require.NoError(t, s.Drain(context.Background()))
	}
}

func TestDiagnostics_ReportsDebt(t *testing.T) {
	s := semaphore.New(2)
	s.Consume(5)
	dump := s.Diagnostics(0)
	assert.Contains(t, dump, "no waiters, 0 of 2 available, 5 held (holders not tracked)\n")
	assert.Contains(t, dump, "capacity 2, available 0, held 5, waiters 0 (0 units)\nin debt by 3 units after Consume or a shrinking Resize\n")
	s.Release(5)
}

// A holder's label is a value a user controls: the dump quotes it, so a
// hostile label neither forges a row nor passes for a site.
func TestDiagnostics_QuotesHolderLabels(t *testing.T) {
	for _, h := range hostile.Texts {
		s := semaphore.New(2, semaphore.WithName("db"), semaphore.WithHolderTracking())
		u, err := s.AcquireUnits(semaphore.ContextWithHolderLabel(context.Background(), h.Value), 1)
		require.NoError(t, err)
		dump := s.Diagnostics(0)
		assert.Contains(t, headline(s), "(oldest: "+strconv.Quote(h.Value)+" (diagnostics_test.go:", h.Name)
		assert.Contains(t, dump, strconv.Quote(h.Value)+" (diagnostics_test.go:", h.Name)
		assert.Equal(t, 6, strings.Count(dump, "\n"), "%s: a headline, the counts and a table of one holder:\n%s", h.Name, dump)
		u.Release()
	}
}
