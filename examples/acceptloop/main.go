// Command acceptloop bounds a TCP server's concurrency with a limiting listener:
// netsem.Listener takes a unit of a semaphore before each Accept and the
// connection gives it back when it is closed, so at most limit connections are
// served at once and further clients wait in the kernel's listen backlog
// (backpressure) instead of piling up inside the process.
//
// The program starts the server on 127.0.0.1, drives a burst of clients itself,
// prints the peak concurrency it observed against the limit, and exits. It shuts
// down by breaking the semaphore, which stops the accept loop with its cause.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/netsem"
)

const (
	limit   = 4
	clients = 40
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "acceptloop:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	conns := semaphore.New(limit, semaphore.WithName("conns"))
	ln := netsem.Listener(inner, conns)
	var active, peak atomic.Int64
	served := make(chan error, 1)
	go func() { served <- serve(ln, &active, &peak) }()

	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Go(func() {
			if err := client(ln.Addr().String(), i); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	elapsed := time.Since(start)

	// Shut down: break the semaphore, so that the accept loop, waiting for a
	// unit or about to, stops with the cause; close the listener for an Accept
	// already waiting in the kernel.
	conns.Break(errors.New("server shutting down"))
	ln.Close()
	if err := <-served; !errors.Is(err, semaphore.ErrBroken) && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("accept loop: %w", err)
	}

	fmt.Fprintf(out, "served %d clients in %v with at most %d at once (limit %d)\n",
		clients, elapsed.Round(time.Millisecond), peak.Load(), limit)
	fmt.Fprintln(out, conns.Stats().Queued, "accepts waited for a free unit")
	if peak.Load() > limit {
		return fmt.Errorf("peak concurrency %d exceeded the limit %d", peak.Load(), limit)
	}
	return nil
}

// serve is the accept loop. The listener takes a unit before each Accept and
// the connection returns it on Close, so the loop itself knows nothing of the
// limit. It returns Accept's error once handlers have finished.
func serve(ln net.Listener, active, peak *atomic.Int64) error {
	var handlers sync.WaitGroup
	defer handlers.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		handlers.Go(func() {
			defer c.Close()
			now := active.Add(1)
			for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
			}
			handle(c)
			active.Add(-1)
		})
	}
}

// handle echoes one line back after a little work.
func handle(c net.Conn) {
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return
	}
	time.Sleep(10 * time.Millisecond) // the work a real server would do
	fmt.Fprint(c, "echo: "+line)
}

func client(addr string, i int) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "hello %d\n", i)
	reply, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("client %d: %w", i, err)
	}
	if want := fmt.Sprintf("echo: hello %d\n", i); reply != want {
		return fmt.Errorf("client %d: got %q, want %q", i, reply, want)
	}
	return nil
}
