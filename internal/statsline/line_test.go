package statsline_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fairsem/semaphore/internal/statsline"
)

func TestLine_WritesTheSubjectThenEachPairInOrder(t *testing.T) {
	l := statsline.New("semaphore", "db")
	l.Int("capacity", -3)
	l.Uint("acquired", 1<<64-1)
	l.Bool("broken", true)
	l.Word("memory", "6M")
	l.Quote("reason", "shutting down")
	assert.Equal(t, `semaphore "db" capacity=-3 acquired=18446744073709551615 broken=true memory=6M reason="shutting down"`, l.String())
}

func TestLine_NamesTheUnnamed(t *testing.T) {
	l := statsline.New("keyed", "")
	l.Int("keys", 0)
	assert.Equal(t, "unnamed keyed keys=0", l.String())
}

func TestQuoted_QuotesEvenTheEmptyName(t *testing.T) {
	l := statsline.Quoted("key", "")
	l.Int("held", 1)
	assert.Equal(t, `key "" held=1`, l.String())
	assert.Equal(t, `key "a\nb"`, statsline.Quoted("key", "a\nb").String())
}

// A hostile name stays inside its quotes: a newline cannot start a line, markup
// and a fake pair cannot pass for fields, invalid UTF-8 is escaped, and a long
// name is written whole.
func TestLine_QuotesHostileNames(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"a\nb", `semaphore "a\nb" waiters=1`},
		{`<b onclick="x">" waiters=9`, `semaphore "<b onclick=\"x\">\" waiters=9" waiters=1`},
		{"\xff\x00", `semaphore "\xff\x00" waiters=1`},
		{strings.Repeat("n", 5000), `semaphore "` + strings.Repeat("n", 5000) + `" waiters=1`},
	} {
		l := statsline.New("semaphore", tc.name)
		l.Int("waiters", 1)
		assert.Equal(t, tc.want, l.String())
		assert.NotContains(t, l.String(), "\n")
	}
}

func TestLine_RoundsDurationsAsErrorsDo(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{1234 * time.Nanosecond, "1µs"},
		{1234567 * time.Nanosecond, "1.23ms"},
		{1234567891 * time.Nanosecond, "1.235s"},
		{-1234567 * time.Nanosecond, "-1.23ms"},
		{3*time.Hour + 1, "3h0m0s"},
	} {
		l := statsline.New("x", "y")
		l.Duration("wait_time", tc.d)
		assert.Equal(t, `x "y" wait_time=`+tc.want, l.String(), tc.d)
	}
}

func TestLine_WritesTimesInUTCToTheMillisecond(t *testing.T) {
	l := statsline.New("x", "y")
	l.Time("last_change", time.Date(2026, 3, 4, 5, 6, 7, 891_234_567, time.FixedZone("CET", 3600)))
	assert.Equal(t, `x "y" last_change=2026-03-04T04:06:07.891Z`, l.String(), "in UTC")
}
