package amqpsem

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairsem/semaphore/internal/statsline/statslinetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Stats prints on one line in the form every package's Stats prints in: the
// subject, then one key=value pair per field in declaration order, the slot
// lists counted, the reason only when broken, the name and reason quoted.
func TestStats_StringNamesEveryField(t *testing.T) {
	st := Stats{Name: "n", Slots: 4, Holders: []int{1, 2, 5}, Held: 2, Mine: []int{1}, Waiting: 3, Broken: true, Reason: "r",
		Wakeup: WakePolling, Acquired: 7, TimedOut: 1, Cancelled: 2, Contended: 3, LockedRetries: 4, Lost: 5, Walks: 9}
	statslinetest.EveryField(t, st, st.String(), nil)
	assert.Equal(t, `amqpsem "n" slots=4 holders=3 held=2 mine=1 waiting=3 broken=true reason="r" wakeup=polling acquired=7 timed_out=1 cancelled=2 contended=3 locked_retries=4 lost=5 walks=9`, st.String())
	assert.Equal(t, "unnamed amqpsem slots=0 holders=0 held=0 mine=0 waiting=0 broken=false wakeup=auto acquired=0 timed_out=0 cancelled=0 contended=0 locked_retries=0 lost=0 walks=0", Stats{}.String())
	st = Stats{Name: strings.Repeat("x", 5000) + "\n<b>", Broken: true, Reason: "down\n\"for\" <i>maintenance</i>"}
	line := st.String()
	assert.Equal(t, 0, strings.Count(line, "\n"), "one line")
	assert.True(t, strings.HasPrefix(line, "amqpsem "+strconv.Quote(st.Name)+" slots=0 "), line)
	assert.Contains(t, line, ` broken=true reason="down\n\"for\" <i>maintenance</i>" wakeup=auto `)
}

// A live handle's Stats names its semaphore and what the broker and the
// handle hold, as %v prints it.
func TestStats_StringOfALiveHandle(t *testing.T) {
	b := broker(t)
	name := testName(t)
	s := newSem(t, b.URL, name, WithSlots(3), WithWakeup(WakePolling))
	ctx := testCtx(t, time.Minute)
	u, err := s.Acquire(ctx, 2)
	require.NoError(t, err)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, name, st.Name)
	assert.Equal(t, fmt.Sprintf("amqpsem %q slots=3 holders=2 held=2 mine=2 waiting=0 broken=false wakeup=polling acquired=1 timed_out=0 cancelled=0 contended=0 locked_retries=0 lost=0 walks=%d", name, st.Walks), fmt.Sprint(st))
	require.NoError(t, u.Release(ctx))
	s.Break(errors.New("down\nfor maintenance"))
	st, err = s.Stats(ctx)
	require.NoError(t, err)
	assert.Contains(t, st.String(), ` held=0 mine=0 waiting=0 broken=true reason="down\nfor maintenance" wakeup=polling acquired=1 `)
}
