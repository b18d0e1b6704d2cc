package semdebug

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/internal/buildflags"
	"github.com/fairsem/semaphore/keyed"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func names(r *registry) []string {
	var out []string
	for _, e := range r.list() {
		if l := e.load(); l != nil {
			out = append(out, l.Reading().Name)
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

func TestRegister_AcceptsEveryLimiterOfTheModuleAndAnyOther(t *testing.T) {
	r := newRegistry()
	s := semaphore.New(2, semaphore.WithName("sem"))
	c := admission.New(admission.Resources{Count: 3, Memory: 1 << 20}, admission.WithName("ctrl"))
	g := admission.NewGroup(admission.Resources{Count: 4, Memory: 1 << 20}, admission.WithName("grp"))
	g.Add("member", 1)
	k := keyed.New(1, keyed.WithName("keys"))
	a := adaptive.New(semaphore.New(4, semaphore.WithName("gated")), nil, adaptive.WithName("adapt"))
	f := newFake("fake", semaphore.Reading{Capacity: 5})
	d := &dumper{name: "other"}
	for _, unregister := range []func(){registerPtr(r, s), registerPtr(r, c), registerPtr(r, g), registerPtr(r, k),
		registerPtr(r, a), registerPtr(r, f), registerPtr(r, d)} {
		defer unregister()
	}
	kinds := map[string]string{}
	for _, row := range newHandler(r).index("", false).Rows {
		kinds[row.Name] = row.Kind
	}
	assert.Equal(t, map[string]string{"sem": "semaphore", "ctrl": "admission controller", "grp": "admission group",
		"keys": "keyed set", "adapt": "adaptive limiter", "fake": "fake", "other": "semdebug.dumper"}, kinds,
		"a Reading without a kind shows the type")
}

// dumper is a Limiter that knows none of its numbers and names no kind: it has
// a name and a dump.
type dumper struct{ name string }

func (d *dumper) Reading() semaphore.Reading {
	return semaphore.Reading{Name: d.name, Unknown: semaphore.AllFields}
}
func (d *dumper) Diagnostics(int) string { return "dump of " + d.name + "\n" }

// A type that is not a Limiter does not compile as Register's argument (a dump
// alone is not enough: the page reads every object), and neither does a
// Limiter that is not a pointer: the page can hold only pointers
// weakly.
func TestRegister_RejectsWhatItCannotShowAtCompileTime(t *testing.T) {
	cases := []struct{ code, want string }{
		{"x := 3; semdebug.Register(&x)", "P (type *int) does not satisfy"},
		{"semdebug.Record(&struct{}{})", "missing method Diagnostics"},
		{"var v value; semdebug.Register(v)", "P (type value) does not satisfy"},
		{"var v value; semdebug.Register(&v)", "missing method Reading"},
	}
	src := `package p
import "github.com/fairsem/semaphore/semdebug"
type value struct{}
func (value) Diagnostics(int) string { return "" }
`
	for i, tc := range cases {
		src += fmt.Sprintf("func f%d() { %s }\n", i, tc.code)
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", src, 0)
	require.NoError(t, err)
	errs := map[int]string{}
	// The package as compiled, from the go command's cache: as this test was
	// built (-race under go test -race), so that it is there already.
	args := slices.Concat([]string{"list"}, buildflags.Args(), []string{"-export", "-f", "{{.Export}}", "."})
	out, err := exec.Command("go", args...).Output()
	require.NoError(t, err)
	lookup := func(path string) (io.ReadCloser, error) {
		require.Equal(t, "github.com/fairsem/semaphore/semdebug", path)
		return os.Open(strings.TrimSpace(string(out)))
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup), Error: func(err error) {
		te := err.(types.Error)
		errs[te.Fset.Position(te.Pos).Line] += te.Msg
	}}
	conf.Check("p", fset, []*ast.File{file}, nil)
	for i, tc := range cases {
		assert.Contains(t, errs[5+i], tc.want, tc.code)
	}
	assert.Len(t, errs, len(cases), "only the calls fail: %v", errs)
}

func TestRegister_PanicsOnNil(t *testing.T) {
	r := newRegistry()
	assert.PanicsWithValue(t, "semdebug: Register(*semaphore.Semaphore(nil)): nothing to show", func() {
		registerPtr(r, (*semaphore.Semaphore)(nil))
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
