// Command core uses the core module as a user's program does: a semaphore
// bounds work, a timed acquire fails with the outcome TimedOut and the core's
// sentinel, and Break then Drain shut it down.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/fairsem/semaphore"
)

func main() {
	sem := semaphore.New(2, semaphore.WithName("published-core"))
	ctx := context.Background()
	u, err := sem.AcquireUnits(ctx, 2)
	if err != nil {
		log.Fatal(err)
	}
	err = sem.AcquireTimeout(10*time.Millisecond, 1)
	if outcome, ok := semaphore.OutcomeOf(err); !ok || outcome != semaphore.TimedOut || !errors.Is(err, semaphore.ErrTimedOut) {
		log.Fatalf("acquire with every unit held: got %v, want an error of outcome TimedOut matching semaphore.ErrTimedOut", err)
	}
	fmt.Println("timed out as expected:", err)
	u.Release()
	sem.Break(errors.New("shutting down"))
	if err := sem.Drain(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("core: ok:", sem)
}
