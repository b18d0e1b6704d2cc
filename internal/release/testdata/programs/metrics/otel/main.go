// Command otel uses the metrics/otel module as a user's program does: a
// semaphore's instruments on an OpenTelemetry meter, read by the SDK's manual
// reader after a call timed out.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/fairsem/semaphore"
	semotel "github.com/fairsem/semaphore/metrics/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func main() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	ctx := context.Background()
	defer provider.Shutdown(ctx)
	m, err := semotel.NewSemaphoreMetrics(provider.Meter("published"))
	if err != nil {
		log.Fatal(err)
	}
	sem := semaphore.New(1, semaphore.WithName("published-otel"), semaphore.WithObserver(m))
	m.Add(sem)

	u, err := sem.AcquireUnits(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	if err := sem.AcquireTimeout(10*time.Millisecond, 1); !errors.Is(err, semaphore.ErrTimedOut) {
		log.Fatalf("acquire with the unit held: got %v, want an error matching semaphore.ErrTimedOut", err)
	}
	u.Release()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	names := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			names[md.Name] = true
		}
	}
	for _, want := range []string{"semaphore.capacity", "semaphore.acquisitions", "semaphore.failures", "semaphore.wait.duration"} {
		if !names[want] {
			log.Fatalf("instrument %s not collected; collected: %v", want, names)
		}
	}
	fmt.Printf("otel: ok: %d instruments collected\n", len(names))
}
