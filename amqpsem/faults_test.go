//go:build linux

package amqpsem

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fairsem/semaphore/internal/fulltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holderChildEnv makes the test binary a holder process: it takes every slot
// of a semaphore, prints "held", and waits to be killed.
const holderChildEnv = "AMQPSEM_TEST_HOLDER"

func runHolderChild(spec string) int {
	f := strings.Fields(spec) // URL NAME SLOTS
	n, _ := strconv.Atoi(f[2])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := New(ctx, f[0], f[1], WithHeartbeat(2*time.Second))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	if _, err := s.Acquire(ctx, int64(n)); err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("held")
	select {}
}

// startHolder runs a holder process of every one of n slots of name.
func startHolder(t *testing.T, url, name string, n int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderChildEnv+"="+url+" "+name+" "+strconv.Itoa(n))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "held\n", line, "the holder process holds its slots")
	return cmd
}

// A holder process killed by SIGKILL: the kernel closes its socket, the
// broker closes the connection and drops its B queues, and a waiter elsewhere
// is granted the slots.
func TestHolderProcess_SIGKILLFreesItsSlots(t *testing.T) {
	fulltest.Fault(t)
	b := broker(t)
	name := testName(t)
	rec := record(t, b.URL, name)
	log := &grantLog{}
	s := newSem(t, b.URL, name, WithSlots(2))
	cmd := startHolder(t, b.URL, name, 2)
	ctx := testCtx(t, time.Minute)
	got := make(chan *Units, 1)
	go func() {
		u, err := s.Acquire(ctx, 2)
		assert.NoError(t, err)
		got <- u
	}()
	waitWaiting(t, s, 1)
	require.NoError(t, cmd.Process.Kill())
	killed := time.Now()
	u := <-got
	log.add(u)
	t.Logf("granted %v after the holder process was killed", time.Since(killed).Round(time.Millisecond))
	assert.Equal(t, []int{1, 2}, u.Slots())
	log.release(t, ctx, u)
	check(t, rec, log, 2)
}

// The headline guarantee: a holder cut off from the broker (a partition:
// nothing crosses, nothing is closed) is told it lost its slots (Lost closes)
// before the broker can drop its B queue, so before anyone else can take the
// slot; the checker sees the use end before the queue's deletion. The cut
// comes right after a ping's answer, so the last ping answered is the last
// request the broker received: Lost must close the heartbeat timeout less the
// margin after it, not later (the margin covers a late timer).
func TestPartition_LostClosesBeforeTheSlotIsGrantedElsewhere(t *testing.T) {
	fulltest.Fault(t)
	const hb, margin = 2 * time.Second, 500 * time.Millisecond
	b := broker(t)
	name := testName(t)
	rec := record(t, b.URL, name)
	log := &grantLog{}
	px := newProxy(t, b.URL)
	a := newSem(t, px.url(), name, WithSlots(1), WithHeartbeat(hb), WithSafetyMargin(margin))
	c := newSem(t, b.URL, name)
	ctx := testCtx(t, 2*time.Minute)
	for round := range 2 {
		h, err := a.Acquire(ctx, 1)
		require.NoError(t, err)
		log.add(h)
		granted := make(chan time.Time, 1)
		var next *Units
		go func() {
			u, err := c.Acquire(ctx, 1)
			assert.NoError(t, err)
			next = u
			granted <- time.Now()
		}()
		waitWaiting(t, c, 1)
		lastUp := px.cutAfterPing(t)
		var lostAt time.Time
		select {
		case <-h.Lost():
			lostAt = time.Now()
		case <-ctx.Done():
			t.Fatal("Lost never closed")
		}
		log.lost(h, lostAt)
		grantedAt := <-granted
		log.add(next)
		assert.True(t, lostAt.Before(grantedAt), "Lost closed %v after the next grant", lostAt.Sub(grantedAt))
		assert.Less(t, lostAt.Sub(lastUp), hb, "Lost closed after the broker could close the connection")
		assert.Less(t, lostAt.Sub(lastUp), hb-margin/2, "Lost closes the heartbeat timeout less the margin after the last ping answered")
		t.Logf("round %d: Lost closed %v after the broker last received bytes (timeout %v less margin %v), %v before the slot was granted elsewhere",
			round, lostAt.Sub(lastUp).Round(time.Millisecond), hb, margin, grantedAt.Sub(lostAt).Round(time.Millisecond))
		assert.ErrorIs(t, h.Err(), ErrLost)
		assert.ErrorIs(t, h.Release(ctx), ErrLost, "releasing lost slots reports the loss")
		px.release()
		px.dropConns()
		log.release(t, ctx, next)
	}
	check(t, rec, log, 1)
}

// A broker restarted: holders are told (the broker closes their connections
// as it stops), the slots persist (durable A queues), and a handle acquires
// again once it is back.
func TestBroker_RestartKeepsSlotsAndTellsHoldersFirst(t *testing.T) {
	fulltest.Fault(t)
	b := ownBroker(t)
	name := testName(t)
	a := newSem(t, b.URL, name, WithSlots(2), WithWakeup(WakePolling))
	c := newSem(t, b.URL, name, WithWakeup(WakePolling))
	ctx := testCtx(t, 3*time.Minute)
	h, err := a.Acquire(ctx, 2)
	require.NoError(t, err)
	granted := make(chan time.Time, 1)
	go func() {
		u, err := c.Acquire(ctx, 1)
		if assert.NoError(t, err) {
			granted <- time.Now()
			assert.NoError(t, u.Release(ctx))
		}
	}()
	waitWaiting(t, c, 1)
	b.Halt()
	var lostAt time.Time
	select {
	case <-h.Lost():
		lostAt = time.Now()
	case <-ctx.Done():
		t.Fatal("Lost never closed")
	}
	assert.ErrorIs(t, h.Err(), ErrLost)
	require.NoError(t, b.Start())
	var grantedAt time.Time
	select {
	case grantedAt = <-granted:
	case <-ctx.Done():
		t.Fatal("the waiter was not granted after the restart")
	}
	assert.True(t, lostAt.Before(grantedAt))
	t.Logf("the holder was told %v before the slot was granted again after the restart", grantedAt.Sub(lostAt).Round(time.Millisecond))
	n, err := a.Slots(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the slots persist")
	u, err := a.Acquire(ctx, 2)
	require.NoError(t, err, "the handle dials a new holding connection")
	require.NoError(t, u.Release(ctx))
}

// A broker frozen (SIGSTOP) answers nothing and closes nothing: the holder is
// told within the heartbeat timeout less the margin, and every call in flight
// ends.
func TestBroker_SIGSTOPTellsHoldersAndEndsCalls(t *testing.T) {
	fulltest.Fault(t)
	b := ownBroker(t)
	name := testName(t)
	s := newSem(t, b.URL, name, WithSlots(2), WithHeartbeat(2*time.Second), WithSafetyMargin(500*time.Millisecond), WithWakeup(WakePolling))
	ctx := testCtx(t, 2*time.Minute)
	h, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, b.Pause())
	stopped := time.Now()
	acquired := make(chan error, 1)
	go func() {
		_, err := s.Acquire(context.Background(), 1)
		acquired <- err
	}()
	<-h.Lost()
	t.Logf("holder told %v after the broker stopped", time.Since(stopped).Round(time.Millisecond))
	assert.LessOrEqual(t, time.Since(stopped), 3*time.Second)
	require.NoError(t, s.Close(), "Close ends while the broker is frozen")
	select {
	case err := <-acquired:
		assert.ErrorIs(t, err, ErrClosed)
	case <-time.After(30 * time.Second):
		t.Error("an acquire against a frozen broker did not end with Close")
	}
	require.NoError(t, b.Resume())
}
