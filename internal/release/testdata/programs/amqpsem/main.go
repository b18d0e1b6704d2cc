// Command amqpsem uses the amqpsem module as a user's program does, against a
// real RabbitMQ started with its amqptest package (the local rabbitmq-server,
// on 127.0.0.1 with its own ports and data): it takes and gives back slots of
// a semaphore while a second handle finds them taken. Without rabbitmq-server
// installed it checks the names only, and says so, unless CI=true.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/amqpsem"
	"github.com/fairsem/semaphore/amqpsem/amqptest"
)

func main() {
	if err := amqpsem.CheckName("jobs-1-A"); !errors.Is(err, amqpsem.ErrBadName) {
		log.Fatalf("CheckName(jobs-1-A): got %v, want ErrBadName", err)
	}
	if _, err := amqptest.Server(); err != nil {
		if os.Getenv("CI") == "true" {
			log.Fatal(err)
		}
		fmt.Println("amqpsem: names checked; no broker run:", err)
		return
	}
	dir, err := os.MkdirTemp("", "published-amqpsem-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	b, err := amqptest.Start(amqptest.Options{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := amqpsem.New(ctx, b.URL, "published", amqpsem.WithSlots(2))
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	c, err := amqpsem.New(ctx, b.URL, "published")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	u, err := a.Acquire(ctx, 2)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("handle a holds slots", u.Slots())
	_, err = c.AcquireTimeout(ctx, 200*time.Millisecond, 1)
	if !errors.Is(err, semaphore.ErrTimedOut) {
		log.Fatalf("handle c, with every slot held by a: got %v, want an error matching semaphore.ErrTimedOut", err)
	}
	fmt.Println("handle c timed out as expected:", err)
	if err := u.Release(ctx); err != nil {
		log.Fatal(err)
	}
	v, err := c.Acquire(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("handle c holds slots", v.Slots(), "after a released")
	if err := v.Release(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("amqpsem: ok")
}
