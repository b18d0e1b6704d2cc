package semdebug

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"

	"github.com/fairsem/semaphore"
)

// BenchmarkAcquireRelease compares a semaphore nobody registered with one that is
// registered but whose page nobody opens: registration adds nothing to its paths.
func BenchmarkAcquireRelease(b *testing.B) {
	run := func(b *testing.B, s *semaphore.Semaphore) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Acquire(ctx, 1); err != nil {
				b.Fatal(err)
			}
			s.Release(1)
		}
	}
	b.Run("unregistered", func(b *testing.B) {
		run(b, semaphore.New(1))
	})
	b.Run("registered", func(b *testing.B) {
		r := newRegistry()
		s := semaphore.New(1)
		defer registerKept(r, s)()
		run(b, s)
		runtime.KeepAlive(s)
	})
}

// BenchmarkIndex renders the index of 10,000 registered semaphores, in each form.
func BenchmarkIndex(b *testing.B) {
	r := newRegistry()
	sems := make([]*semaphore.Semaphore, 10000)
	for i := range sems {
		sems[i] = semaphore.New(int64(1+i%16), semaphore.WithName("sem-"+strconv.Itoa(i%9000)))
		if i%3 == 0 {
			sems[i].TryAcquire(1)
		}
		defer registerKept(r, sems[i])()
	}
	h := newHandler(r)
	for _, query := range []string{"format=html", "format=html&limit=0", "format=json", "format=text"} {
		b.Run("10000/"+query, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/d/?"+query, nil)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				rec.Body.Grow(4 << 20)
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code)
				}
				io.Discard.Write(rec.Body.Bytes())
			}
		})
	}
	runtime.KeepAlive(sems) // registration is weak: unreachable semaphores would leave the page
}
