package otel_test

import (
	"context"
	"fmt"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/keyed"
	"github.com/fairsem/semaphore/metrics/otel"
)

// The instruments observe a semaphore's state at collection time and record its
// waits as they end.
func ExampleNewSemaphoreMetrics() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	m, err := otel.NewSemaphoreMetrics(provider.Meter("example"))
	if err != nil {
		panic(err)
	}
	sem := semaphore.New(1, semaphore.WithName("db"), semaphore.WithObserver(m))
	m.Add(sem)

	_ = sem.Acquire(context.Background(), 1)
	_ = sem.AcquireTimeout(time.Millisecond, 1) // waits, then times out

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, sm := range rm.ScopeMetrics {
		for _, metric := range sm.Metrics {
			if h, ok := metric.Data.(metricdata.Histogram[float64]); ok {
				outcome, _ := h.DataPoints[0].Attributes.Value("semaphore.wait.outcome")
				fmt.Println(metric.Name, metric.Unit, outcome.AsString(), h.DataPoints[0].Count)
			}
		}
	}
	// Output: semaphore.wait.duration s timed_out 1
}

// AdmissionMetrics wraps a controller's Acquire and Do to measure each operation.
func ExampleNewAdmissionMetrics() {
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer provider.Shutdown(context.Background())

	ctrl := admission.New(admission.Resources{Count: 10, Memory: 1 << 20}, admission.WithName("reads"))
	m, err := otel.NewAdmissionMetrics(provider.Meter("example"), ctrl)
	if err != nil {
		panic(err)
	}
	err = m.Do(context.Background(), "scan", 4096, func(ctx context.Context, p *admission.Permit) error {
		fmt.Println("admitted", p.Op())
		return nil
	})
	fmt.Println(err)
	// Output:
	// admitted scan
	// <nil>
}

// KeyedMetrics observes a keyed set as a whole, and its keys holding the most
// units, at most as many as its last argument.
func ExampleNewKeyedMetrics() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	uploads := keyed.New(4, keyed.WithName("uploads"), keyed.WithLimit(8))
	if _, err := otel.NewKeyedMetrics(provider.Meter("example"), uploads, 1); err != nil {
		panic(err)
	}
	alice, _ := uploads.Acquire(context.Background(), "alice", 3)
	bob, _ := uploads.Acquire(context.Background(), "bob", 1)
	defer alice.Release()
	defer bob.Release()

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, sm := range rm.ScopeMetrics {
		for _, metric := range sm.Metrics {
			if metric.Name == "keyed.units.held" || metric.Name == "keyed.key.units.held" {
				p := metric.Data.(metricdata.Sum[int64]).DataPoints[0]
				if key, ok := p.Attributes.Value("keyed.key"); ok {
					fmt.Println(metric.Name, key.AsString(), p.Value)
				} else {
					fmt.Println(metric.Name, p.Value)
				}
			}
		}
	}
	// Output:
	// keyed.units.held 4
	// keyed.key.units.held alice 3
}
