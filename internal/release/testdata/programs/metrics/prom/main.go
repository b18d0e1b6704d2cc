// Command prom uses the metrics/prom module as a user's program does: a
// semaphore exported by its collector, registered in a Prometheus registry and
// gathered after a call waited and one timed out.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/metrics/prom"
	"github.com/prometheus/client_golang/prometheus"
)

func main() {
	c := prom.NewSemaphoreCollector()
	sem := semaphore.New(1, semaphore.WithName("published-prom"), semaphore.WithObserver(c))
	c.Add(sem)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)

	u, err := sem.AcquireUnits(context.Background(), 1)
	if err != nil {
		log.Fatal(err)
	}
	if err := sem.AcquireTimeout(10*time.Millisecond, 1); !errors.Is(err, semaphore.ErrTimedOut) {
		log.Fatalf("acquire with the unit held: got %v, want an error matching semaphore.ErrTimedOut", err)
	}
	u.Release()

	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	values := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				values[f.GetName()] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				values[f.GetName()] = m.GetGauge().GetValue()
			}
		}
	}
	for name, want := range map[string]float64{"semaphore_acquired_total": 1, "semaphore_timed_out_total": 1, "semaphore_capacity_units": 1} {
		if got, ok := values[name]; !ok || got != want {
			log.Fatalf("%s: got %v (present: %v), want %v", name, got, ok, want)
		}
		fmt.Printf("%s %v\n", name, values[name])
	}
	fmt.Printf("prom: ok: %d metric families\n", len(families))
}
