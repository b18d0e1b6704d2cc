package semdebug

import (
	"runtime"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func names(r *registry) []string {
	var out []string
	for _, e := range r.list() {
		if src := e.load(); src != nil {
			out = append(out, src.Name())
		}
	}
	return out
}

func TestRegister_UnreachableObjectLeavesThePage(t *testing.T) {
	r := newRegistry()
	keep := semaphore.New(1, semaphore.WithName("kept"))
	registerPtr(r, keep)
	func() {
		registerPtr(r, semaphore.New(1, semaphore.WithName("dropped")))
	}()
	require.Eventually(t, func() bool {
		runtime.GC()
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.entries) == 1 && len(r.byPtr) == 1
	}, 10*time.Second, time.Millisecond, "the dropped semaphore's entry is removed once it is collected")
	assert.Equal(t, []string{"kept"}, names(r))
	runtime.KeepAlive(keep)
}

func TestRegister_UnregisterRemovesTheObjectOnce(t *testing.T) {
	r := newRegistry()
	s := semaphore.New(1, semaphore.WithName("s"))
	unregister := registerPtr(r, s)
	require.Equal(t, []string{"s"}, names(r))
	unregister()
	assert.Empty(t, names(r))
	unregister()
	assert.Empty(t, names(r), "a second call does nothing")
	assert.Empty(t, r.byPtr)
}

func TestRegister_TwiceShowsOnceUntilBothAreUndone(t *testing.T) {
	r := newRegistry()
	s := semaphore.New(1, semaphore.WithName("s"))
	first, second := registerPtr(r, s), registerPtr(r, s)
	require.Equal(t, []string{"s"}, names(r))
	first()
	first()
	assert.Equal(t, []string{"s"}, names(r), "one registration is still there")
	second()
	assert.Empty(t, names(r))
}

func TestRegister_IDsAreNeverReused(t *testing.T) {
	r := newRegistry()
	a := semaphore.New(1)
	registerPtr(r, a)()
	registerPtr(r, a)
	es := r.list()
	require.Len(t, es, 1)
	assert.Equal(t, uint64(2), es[0].id)
}

func TestRegister_AcceptsEveryLimiterOfTheModuleAndAnySource(t *testing.T) {
	r := newRegistry()
	s := semaphore.New(2, semaphore.WithName("sem"))
	c := admission.New(admission.Resources{Count: 3, Memory: 1 << 20}, admission.WithName("ctrl"))
	g := admission.NewGroup(admission.Resources{Count: 4, Memory: 1 << 20}, admission.WithName("grp"))
	g.Add("member", 1)
	f := newFake("fake", Snapshot{Capacity: 5})
	for _, unregister := range []func(){registerPtr(r, s), registerPtr(r, c), registerPtr(r, g), registerPtr(r, f)} {
		defer unregister()
	}
	kinds := map[string]string{}
	for _, e := range r.list() {
		src := e.load()
		kinds[src.Name()] = src.Kind()
	}
	assert.Equal(t, map[string]string{"sem": "semaphore", "ctrl": "admission controller", "grp": "admission group", "fake": "fake"}, kinds)
}

func TestRegister_PanicsOnNilAndOnTypesItCannotShow(t *testing.T) {
	r := newRegistry()
	assert.PanicsWithValue(t, "semdebug: Register(*semaphore.Semaphore(nil)): nothing to show", func() {
		registerPtr(r, (*semaphore.Semaphore)(nil))
	})
	x := 3
	assert.PanicsWithValue(t, "semdebug: Register(*int): not a *semaphore.Semaphore, *admission.Controller, *admission.Group or Source", func() {
		registerPtr(r, &x)
	})
	assert.Empty(t, names(r))
}

func TestRegister_UsesThePackageRegistryThatHandlerShows(t *testing.T) {
	s := semaphore.New(1, semaphore.WithName("public"))
	unregister := Register(s)
	code, _, body := get(t, Handler(), "/debug/semaphores/?format=text")
	require.Equal(t, 200, code)
	assert.Contains(t, body, `"public"`)
	unregister()
	_, _, body = get(t, Handler(), "/debug/semaphores/?format=text")
	assert.NotContains(t, body, `"public"`)
}
