package semdebug_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/semdebug"
)

// Register the semaphores worth watching and mount the page on a mux of your
// own, behind your own authentication.
func ExampleHandler() {
	db := semaphore.New(4, semaphore.WithName("db"), semaphore.WithHolderTracking())
	defer semdebug.Register(db)()
	if err := db.Acquire(context.Background(), 1); err != nil {
		panic(err)
	}
	defer db.Release(1)

	mux := http.NewServeMux()
	mux.Handle("/debug/semaphores/", semdebug.Handler(semdebug.WithStallThreshold(2*time.Second)))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/debug/semaphores/?format=text")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	row := strings.Fields(strings.Split(string(body), "\n")[3])
	fmt.Println(row[1:5])
	// Output: ["db" semaphore 4 1]
}

// queue is a limiter of another package: it plugs into the page by reading
// itself in the core's plain values, and dumping itself, on its pointer type.
type queue struct {
	name  string
	limit int64
	busy  int64
}

func (q *queue) Reading() semaphore.Reading {
	return semaphore.Reading{Kind: "job queue", Name: q.name, Capacity: q.limit, Held: q.busy, Available: q.limit - q.busy,
		// It counts no calls: the page shows its counters as unknown ("-"), not as 0.
		Unknown: semaphore.AllFields &^ (semaphore.CapacityField | semaphore.HeldField | semaphore.WaitersField | semaphore.BrokenField)}
}

func (q *queue) Diagnostics(int) string {
	return fmt.Sprintf("%s: %d of %d busy\n", q.name, q.busy, q.limit)
}

func ExampleLimiter() {
	q := &queue{name: "thumbnails", limit: 8, busy: 3}
	defer semdebug.Register(q)()

	rec := httptest.NewRecorder()
	semdebug.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/debug/semaphores/?format=text", nil))
	row := strings.Fields(strings.Split(rec.Body.String(), "\n")[3])
	fmt.Println(row[1:7])
	// The page holds q weakly: q must stay reachable for as long as it should
	// be shown.
	runtime.KeepAlive(q)
	// Output: ["thumbnails" job queue 8 3 5]
}
