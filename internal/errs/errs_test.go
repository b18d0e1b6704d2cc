package errs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fairsem/semaphore/internal/errs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestError_ReadsSubjectOpUnitsOfAndWhy(t *testing.T) {
	e := &errs.Error{Subject: errs.Text(`keyed "t"`), Op: "acquire", N: 2, Of: `for key "k"`, Why: "wait queue full"}
	assert.Equal(t, `keyed "t": acquire 2 units for key "k": wait queue full`, e.Error())
	e = &errs.Error{Subject: errs.Text(`semaphore "s"`), Op: "acquire", N: 1, Why: "broken"}
	assert.Equal(t, `semaphore "s": acquire 1 unit: broken`, e.Error())
	e = &errs.Error{Subject: errs.Text(`semaphore "s"`), Why: "broken"}
	assert.Equal(t, `semaphore "s": broken`, e.Error())
}

func TestError_MatchesEachOfItsErrors(t *testing.T) {
	a, b := errors.New("a"), errors.New("b")
	e := &errs.Error{Subject: errs.Text("x"), Why: "w", Matches: []error{a, b}}
	assert.ErrorIs(t, e, a)
	assert.ErrorIs(t, e, b)
	assert.NotErrorIs(t, e, errors.New("a"))
}

func TestOutcomeIn_OnlyTheOutermostErrorCounts(t *testing.T) {
	inner := &errs.Error{Subject: errs.Text("inner"), Why: "w", Outcome: uint8(3)}
	outer := &errs.Error{Subject: errs.Text("outer"), Why: "w", Matches: []error{inner}}
	assert.Nil(t, errs.OutcomeIn(outer), "the outer error ends no call; its cause's outcome is not its own")
	outer.Outcome = uint8(2)
	assert.Equal(t, uint8(2), errs.OutcomeIn(fmt.Errorf("wrapped: %w", outer)))
	assert.Equal(t, uint8(3), errs.OutcomeIn(inner))
	assert.Nil(t, errs.OutcomeIn(nil))
	assert.Nil(t, errs.OutcomeIn(errors.New("plain")))
}

func TestCount_OneInTheSingular(t *testing.T) {
	assert.Equal(t, "1 unit", errs.Count(1, "unit"))
	assert.Equal(t, "0 units", errs.Count(0, "unit"))
	assert.Equal(t, "-1 units", errs.Count(-1, "unit"))
	assert.Equal(t, "9223372036854775807 waiters", errs.Count(1<<63-1, "waiter"))
}

func TestLabel_QuotesHostileNamesAndNamesTheUnnamedByAddress(t *testing.T) {
	assert.Equal(t, `semaphore "a\nb<i>\""`, errs.Label("semaphore", "a\nb<i>\"", nil))
	long := strings.Repeat("x", 5000)
	assert.Equal(t, `keyed "`+long+`"`, errs.Label("keyed", long, nil))
	p := new(int)
	assert.Equal(t, fmt.Sprintf("unnamed semaphore %p", p), errs.Label("semaphore", "", p))
}

func TestContext_SaysHowTheContextEndedAndMatchesItsErrorAndCause(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	deadline, why, matches := errs.Context(ctx)
	assert.False(t, deadline)
	assert.Equal(t, "context canceled", why)
	assert.Equal(t, []error{context.Canceled}, matches)

	cause := errors.New("shutting down")
	ctx, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(cause)
	deadline, why, matches = errs.Context(ctx)
	assert.False(t, deadline)
	assert.Equal(t, `context canceled: "shutting down"`, why)
	assert.Equal(t, []error{context.Canceled, cause}, matches)

	ctx, cancel = context.WithTimeout(context.Background(), -1)
	defer cancel()
	deadline, why, matches = errs.Context(ctx)
	require.True(t, deadline)
	assert.Equal(t, "context deadline exceeded", why)
	assert.Equal(t, []error{context.DeadlineExceeded}, matches)
}

func TestRound_KeepsThreeSignificantPlacesOrSoAtEveryScale(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1500*time.Millisecond + 400*time.Microsecond: "1.5s",
		-2*time.Second - 300*time.Microsecond:        "-2s",
		120*time.Millisecond + 4*time.Microsecond:    "120ms",
		35*time.Microsecond + 400:                    "35µs",
		-(3*time.Millisecond + 1234):                 "-3ms",
		0:                                            "0s",
	} {
		assert.Equal(t, want, errs.Round(d).String(), "%d ns", int64(d))
	}
}
