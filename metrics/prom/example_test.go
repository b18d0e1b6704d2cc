package prom_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/keyed"
	"github.com/fairsem/semaphore/metrics/prom"
)

// One collector exports any number of semaphores, and is their Observer for the
// wait-time histogram.
func ExampleNewSemaphoreCollector() {
	c := prom.NewSemaphoreCollector()
	sem := semaphore.New(1, semaphore.WithName("db"), semaphore.WithObserver(c))
	c.Add(sem)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)

	_ = sem.Acquire(context.Background(), 1)
	_ = sem.AcquireTimeout(time.Millisecond, 1) // waits, then times out

	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP semaphore_timed_out_total Calls that failed on a deadline: AcquireTimeout's or the context's.
# TYPE semaphore_timed_out_total counter
semaphore_timed_out_total{semaphore="db"} 1
`), "semaphore_timed_out_total")
	fmt.Println(err)
	fmt.Println(testutil.CollectAndCount(c, "semaphore_wait_duration_seconds"), "wait-time series (one per outcome)")
	// Output:
	// <nil>
	// 6 wait-time series (one per outcome)
}

// An AdmissionCollector exports a controller; its Do measures each operation.
func ExampleNewAdmissionCollector() {
	ctrl := admission.New(admission.Resources{Count: 10, Memory: 1 << 20}, admission.WithName("reads"))
	c := prom.NewAdmissionCollector(ctrl)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)

	_ = c.Do(context.Background(), "scan", 4096, func(context.Context, *admission.Permit) error { return nil })

	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP admission_acquired_total Permits admitted (Acquire and Readmit), at once or after queuing.
# TYPE admission_acquired_total counter
admission_acquired_total{controller="reads"} 1
`), "admission_acquired_total")
	fmt.Println(err)
	fmt.Println(testutil.CollectAndCount(c, "admission_wait_duration_seconds"), "wait-time series: scan, acquired")
	// Output:
	// <nil>
	// 1 wait-time series: scan, acquired
}

// A KeyedCollector exports a keyed set as a whole, and its keys holding the most
// units, at most as many as its second argument.
func ExampleNewKeyedCollector() {
	uploads := keyed.New(4, keyed.WithName("uploads"), keyed.WithLimit(8))
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewKeyedCollector(uploads, 1))

	alice, _ := uploads.Acquire(context.Background(), "alice", 3)
	bob, _ := uploads.Acquire(context.Background(), "bob", 1)
	defer alice.Release()
	defer bob.Release()

	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP keyed_held_units Units held now, summed over keys.
# TYPE keyed_held_units gauge
keyed_held_units{set="uploads"} 4
# HELP keyed_key_held_units Units held now by one of the keys holding the most.
# TYPE keyed_key_held_units gauge
keyed_key_held_units{key="alice",set="uploads"} 3
`), "keyed_held_units", "keyed_key_held_units")
	fmt.Println(err)
	// Output: <nil>
}
