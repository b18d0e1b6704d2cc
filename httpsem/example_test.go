package httpsem_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/httpsem"
)

// At most 2 requests in flight, at most 4 waiting, none waiting more than a
// second; the rest are refused with 503 and Retry-After.
func ExampleLimit() {
	sem := semaphore.New(2, semaphore.WithMaxWaiters(4), semaphore.WithName("api"))
	limit := httpsem.Limit(sem, httpsem.WithTimeout(time.Second))
	handler := limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	}))

	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Code, rec.Body.String())

	sem.Break(nil) // shutting down: refused at once, without Retry-After
	rec = httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Code, rec.Header().Get("Retry-After") == "")
	// Output:
	// 200 hello
	// 503 true
}

// Admission by count and memory, the operation named by the route, and the
// permit available to the handler.
func ExampleAdmit() {
	ctrl := admission.New(admission.Resources{Count: 8, Memory: 64 << 20}, admission.WithName("api"),
		admission.WithMaxWaiters(100))
	admit := httpsem.Admit(ctrl, httpsem.WithMemory(func(r *http.Request) int64 {
		return 1 << 20 // the estimate for one request
	}))
	mux := http.NewServeMux()
	mux.Handle("GET /items/{id}", admit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := httpsem.PermitFrom(r.Context())
		fmt.Fprintf(w, "%s holds %d bytes", p.Op(), p.Consumed().Memory)
	})))

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/items/42", nil))
	fmt.Println(rec.Body.String())
	// Output: GET /items/{id} holds 1048576 bytes
}
