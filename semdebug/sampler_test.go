package semdebug

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSampler_RunsOnlyWhileAPageIsViewed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		f := newFake("f", semaphore.Reading{Capacity: 1})
		defer registerKept(r, f)()
		h := newHandler(r)

		get(t, h, "/d/?format=json")
		synctest.Wait()
		assert.False(t, samplerRunning(r), "the index starts no sampler")

		code, _, _ := get(t, h, "/d/1")
		require.Equal(t, 200, code)
		assert.True(t, samplerRunning(r), "viewing the object's page does")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		e := r.lookup(1)
		assert.Len(t, e.obs.historyPoints(), 11, "one sample at once, then one a second")

		time.Sleep(viewLease)
		synctest.Wait()
		assert.False(t, samplerRunning(r), "the sampler stops once the view's lease ends")
		n := len(e.obs.historyPoints())
		time.Sleep(time.Minute)
		assert.Len(t, e.obs.historyPoints(), n)
	})
}

func TestSampler_ARefreshRenewsTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		defer registerKept(r, newFake("f", semaphore.Reading{}))()
		h := newHandler(r)
		for range 5 {
			get(t, h, "/d/1?format=json")
			time.Sleep(viewLease / 2)
			synctest.Wait()
			require.True(t, samplerRunning(r))
		}
		outlastSampling(t, r)
	})
}

func TestSampler_SamplesOnlyTheViewedObjects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		defer registerKept(r, newFake("viewed", semaphore.Reading{}))()
		defer registerKept(r, newFake("ignored", semaphore.Reading{}))()
		get(t, newHandler(r), "/d/1")
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.NotEmpty(t, r.lookup(1).obs.historyPoints())
		assert.Empty(t, r.lookup(2).obs.historyPoints())
		outlastSampling(t, r)
	})
}

func TestRecord_SamplesUntilStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		f := newFake("f", semaphore.Reading{})
		defer registerKept(r, f)()
		stop := recordPtr(r, f)
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		assert.True(t, samplerRunning(r), "Record samples for as long as it is not stopped")
		assert.Len(t, r.lookup(1).obs.historyPoints(), historyLen)
		stop()
		stop()
		time.Sleep(time.Second)
		synctest.Wait()
		assert.False(t, samplerRunning(r))
	})
}

func TestRecord_PanicsOnAnUnregisteredObject(t *testing.T) {
	r := newRegistry()
	f := newFake("f", semaphore.Reading{})
	assert.PanicsWithValue(t, "semdebug: Record(*semdebug.fakeSource "+ptrString(f)+"): not registered", func() {
		recordPtr(r, f)
	})
}

func TestRecord_UsesThePackageRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake("public-record", semaphore.Reading{})
		unregister := Register(f)
		stop := Record(f)
		stop()
		unregister()
	})
}

func TestSampler_ExitsAtOnceWhenNothingNeedsItAnyMore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		f, g := newFake("f", semaphore.Reading{}), newFake("g", semaphore.Reading{})
		unregister := registerKept(r, f)
		defer registerKept(r, g)()
		stopG := recordPtr(r, g)
		recordPtr(r, f)
		synctest.Wait()
		stopG()
		synctest.Wait()
		assert.True(t, samplerRunning(r), "f is still recorded")
		unregister()
		synctest.Wait()
		assert.False(t, samplerRunning(r), "without waiting for the next tick")
	})
}
