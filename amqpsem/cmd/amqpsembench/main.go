// Command amqpsembench measures amqpsem against a RabbitMQ node it starts
// (amqptest: the local rabbitmq-server, with the event exchange), or one given
// with -url, across real OS processes:
//
//   - floor: the broker's own requests, raw, on the same node: a round trip
//     (basic.qos), a probe batch as an acquire sends it (confirmed publishes),
//     an exclusive queue.declare and a queue.delete: what an acquire and a
//     release are made of;
//
//   - uncontended: one handle, one slot, Acquire(1) then Release, in a row;
//
//   - throughput: 1, 4 and 8 worker processes of -goroutines goroutines each,
//     each looping Acquire(1), a hold of -hold, Release, on -slots slots: grants
//     per second, acquire latency, and the order in which waiters of
//     different processes are served (the share of grants that overtook an
//     earlier waiter still waiting);
//
//   - handoff: a holder releases the only slot while another handle waits:
//     the time from the start of the release to the waiter's grant, with
//     broker events and with polling.
//
//     go -C amqpsem run ./cmd/amqpsembench
//     go -C amqpsem run ./cmd/amqpsembench -quick     # a smoke run of a few seconds
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fairsem/semaphore/amqpsem"
	"github.com/fairsem/semaphore/amqpsem/amqptest"
	amqp "github.com/rabbitmq/amqp091-go"
)

const workerEnv = "AMQPSEMBENCH_WORKER"

func main() {
	if spec := os.Getenv(workerEnv); spec != "" {
		if err := worker(spec, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "amqpsembench worker:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "amqpsembench:", err)
		os.Exit(1)
	}
}

type config struct {
	url        string
	quick      bool
	duration   time.Duration
	goroutines int
	slots      int
	hold       time.Duration
	rounds     int
	handoffs   int
	procs      []int
}

func run(args []string, out io.Writer) error {
	var c config
	fs := flag.NewFlagSet("amqpsembench", flag.ContinueOnError)
	fs.StringVar(&c.url, "url", "", "a broker to use (default: start one with amqptest)")
	fs.BoolVar(&c.quick, "quick", false, "a smoke run: short phases, 1 and 2 processes")
	fs.DurationVar(&c.duration, "duration", 3*time.Second, "each throughput run")
	fs.IntVar(&c.goroutines, "goroutines", 4, "goroutines per worker process")
	fs.IntVar(&c.slots, "slots", 4, "slots of the throughput semaphore")
	fs.DurationVar(&c.hold, "hold", time.Millisecond, "how long a grant is held")
	fs.IntVar(&c.rounds, "rounds", 200, "uncontended acquire and release pairs, and raw requests of each kind")
	fs.IntVar(&c.handoffs, "handoffs", 20, "handoffs measured per wakeup mode")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c.procs = []int{1, 4, 8}
	if c.quick {
		c.duration, c.rounds, c.handoffs, c.procs = 500*time.Millisecond, 20, 3, []int{1, 2}
	}
	if c.url == "" {
		dir, err := os.MkdirTemp("", "amqpsembench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		b, err := amqptest.Start(amqptest.Options{Dir: dir, Plugins: []string{"rabbitmq_event_exchange"}})
		if err != nil {
			return err
		}
		defer b.Stop()
		c.url = b.URL
		fmt.Fprintf(out, "broker: a RabbitMQ node started for this run (amqptest), event exchange enabled\n")
	}
	ctx := context.Background()
	if err := floor(ctx, c, out); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	if err := uncontended(ctx, c, out); err != nil {
		return fmt.Errorf("uncontended: %w", err)
	}
	for _, p := range c.procs {
		if err := throughput(ctx, c, p, out); err != nil {
			return fmt.Errorf("throughput at %d processes: %w", p, err)
		}
	}
	for _, w := range []amqpsem.Wakeup{amqpsem.WakeEvents, amqpsem.WakePolling} {
		if err := handoff(ctx, c, w, out); err != nil {
			return fmt.Errorf("handoff (%s): %w", w, err)
		}
	}
	return nil
}

func name(what string) string {
	return fmt.Sprintf("amqpsembench.%s.%d.%d", what, os.Getpid(), time.Now().UnixNano())
}

// floor times the broker's own requests that an acquire and a release are
// made of, raw, on two connections as a handle has them.
func floor(ctx context.Context, c config, out io.Writer) error {
	hold, err := amqp.Dial(c.url)
	if err != nil {
		return err
	}
	defer hold.Close()
	probe, err := amqp.Dial(c.url)
	if err != nil {
		return err
	}
	defer probe.Close()
	ch, err := hold.Channel()
	if err != nil {
		return err
	}
	pch, err := probe.Channel()
	if err != nil {
		return err
	}
	if err := pch.Confirm(false); err != nil {
		return err
	}
	n := name("floor")
	if _, err := ch.QueueDeclare(n+"-1-A", true, false, false, false, nil); err != nil {
		return err
	}
	defer ch.QueueDelete(n+"-1-A", false, false, false)
	probes := []string{n + "-1-A", n + "-1-B", n + "-2-A", n + "-2-B"} // a walk of one slot
	var rt, batch, declare, del []time.Duration
	for range c.rounds {
		t0 := time.Now()
		if err := ch.Qos(0, 0, false); err != nil {
			return err
		}
		t1 := time.Now()
		var dcs []*amqp.DeferredConfirmation
		for _, q := range probes {
			dc, err := pch.PublishWithDeferredConfirm("", q, true, false, amqp.Publishing{Expiration: "0"})
			if err != nil {
				return err
			}
			dcs = append(dcs, dc)
		}
		for _, dc := range dcs {
			if _, err := dc.WaitContext(ctx); err != nil {
				return err
			}
		}
		t2 := time.Now()
		if _, err := ch.QueueDeclare(n+"-1-B", false, false, true, false, nil); err != nil {
			return err
		}
		t3 := time.Now()
		if _, err := ch.QueueDelete(n+"-1-B", false, false, false); err != nil {
			return err
		}
		t4 := time.Now()
		rt, batch, declare, del = append(rt, t1.Sub(t0)), append(batch, t2.Sub(t1)), append(declare, t3.Sub(t2)), append(del, t4.Sub(t3))
	}
	fmt.Fprintf(out, "\nfloor, raw amqp091 requests, %d rounds: round trip (basic.qos) %s; probe batch of 4 confirmed publishes %s; exclusive queue.declare %s; queue.delete %s\n",
		c.rounds, dist(rt), dist(batch), dist(declare), dist(del))
	return nil
}

func uncontended(ctx context.Context, c config, out io.Writer) error {
	s, err := amqpsem.New(ctx, c.url, name("uncontended"), amqpsem.WithSlots(1))
	if err != nil {
		return err
	}
	defer s.Close()
	var acq, rel, both []time.Duration
	for i := range c.rounds + 5 {
		t0 := time.Now()
		un, err := s.Acquire(ctx, 1)
		if err != nil {
			return err
		}
		t1 := time.Now()
		if err := un.Release(ctx); err != nil {
			return err
		}
		t2 := time.Now()
		if i >= 5 { // the first rounds dial the holding connection
			acq, rel, both = append(acq, t1.Sub(t0)), append(rel, t2.Sub(t1)), append(both, t2.Sub(t0))
		}
	}
	fmt.Fprintf(out, "\nuncontended, 1 slot, %d rounds: acquire %s; release %s; acquire+release %s\n", c.rounds, dist(acq), dist(rel), dist(both))
	return nil
}

// A grantRecord is one acquire of a worker: when it was called and granted.
type grantRecord struct {
	Proc          int
	Arrive, Grant int64 // unix nanoseconds
}

func throughput(ctx context.Context, c config, procs int, out io.Writer) error {
	n := name(fmt.Sprintf("throughput%d", procs))
	s, err := amqpsem.New(ctx, c.url, n, amqpsem.WithSlots(c.slots))
	if err != nil {
		return err
	}
	defer s.Close()
	start := time.Now().Add(2 * time.Second).UnixNano() // every worker connected by then
	var mu sync.Mutex
	var all []grantRecord
	var errs []error
	var wg sync.WaitGroup
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs, err := runWorker(c, n, p, start)
			mu.Lock()
			defer mu.Unlock()
			all = append(all, recs...)
			errs = append(errs, err)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var lat []time.Duration
	perProc := make([]int, procs)
	for _, r := range all {
		lat = append(lat, time.Duration(r.Grant-r.Arrive))
		perProc[r.Proc]++
	}
	// Order across processes: a grant overtook if an acquire of another process
	// that arrived earlier was still waiting when it was granted.
	slices.SortFunc(all, func(a, b grantRecord) int { return int(a.Arrive - b.Arrive) })
	overtook := 0
	for i, g := range all {
		for _, e := range all[:i] {
			if e.Proc != g.Proc && e.Arrive < g.Arrive && e.Grant > g.Grant {
				overtook++
				break
			}
		}
	}
	share := 0.0
	if len(all) > 0 {
		share = 100 * float64(overtook) / float64(len(all))
	}
	fmt.Fprintf(out, "\nthroughput: %d processes x %d goroutines, %d slots, hold %v, %v: %.0f grants/s; acquire latency %s; grants per process %v; %.1f%% of grants overtook an earlier waiter of another process\n",
		procs, c.goroutines, c.slots, c.hold, c.duration, float64(len(all))/c.duration.Seconds(), dist(lat), perProc, share)
	return nil
}

// runWorker runs this program again as worker process p and returns its grants.
func runWorker(c config, n string, p int, start int64) ([]grantRecord, error) {
	spec := strings.Join([]string{c.url, n, strconv.Itoa(p), strconv.Itoa(c.goroutines), strconv.FormatInt(start, 10), c.duration.String(), c.hold.String()}, " ")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), workerEnv+"="+spec)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var recs []grantRecord
	derr := json.NewDecoder(bufio.NewReader(stdout)).Decode(&recs)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("worker %d: %w", p, err)
	}
	return recs, derr
}

// worker is a worker process: its goroutines loop acquire, hold, release from
// the start time for the duration; it prints its grants as JSON.
func worker(spec string, out io.Writer) error {
	f := strings.Fields(spec) // URL NAME PROC GOROUTINES START DURATION HOLD
	proc, _ := strconv.Atoi(f[2])
	g, _ := strconv.Atoi(f[3])
	startNs, _ := strconv.ParseInt(f[4], 10, 64)
	d, _ := time.ParseDuration(f[5])
	h, _ := time.ParseDuration(f[6])
	ctx := context.Background()
	s, err := amqpsem.New(ctx, f[0], f[1])
	if err != nil {
		return err
	}
	defer s.Close()
	// Dial the holding connection before the start.
	un, err := s.Acquire(ctx, 0)
	if err != nil {
		return err
	}
	if err := un.Release(ctx); err != nil {
		return err
	}
	time.Sleep(time.Until(time.Unix(0, startNs)))
	end := time.Now().Add(d)
	var mu sync.Mutex
	var recs []grantRecord
	var errs []error
	var wg sync.WaitGroup
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				actx, cancel := context.WithDeadline(ctx, end)
				arrive := time.Now()
				un, err := s.Acquire(actx, 1)
				cancel()
				if err != nil {
					return // the run ended
				}
				granted := time.Now()
				time.Sleep(h)
				err = un.Release(ctx)
				mu.Lock()
				recs = append(recs, grantRecord{Proc: proc, Arrive: arrive.UnixNano(), Grant: granted.UnixNano()})
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(recs)
}

func handoff(ctx context.Context, c config, w amqpsem.Wakeup, out io.Writer) error {
	n := name("handoff")
	a, err := amqpsem.New(ctx, c.url, n, amqpsem.WithSlots(1), amqpsem.WithWakeup(w))
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := amqpsem.New(ctx, c.url, n, amqpsem.WithWakeup(w))
	if err != nil {
		return err
	}
	defer b.Close()
	var lat []time.Duration
	for range c.handoffs {
		h, err := a.Acquire(ctx, 1)
		if err != nil {
			return err
		}
		type grant struct {
			at  time.Time
			err error
		}
		got := make(chan grant, 1)
		go func() {
			v, err := b.Acquire(ctx, 1)
			at := time.Now()
			if err == nil {
				err = v.Release(ctx)
			}
			got <- grant{at, err}
		}()
		if err := waitWaiting(ctx, b); err != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond) // the waiter has probed and waits
		t0 := time.Now()
		if err := h.Release(ctx); err != nil {
			return err
		}
		g := <-got
		if g.err != nil {
			return g.err
		}
		lat = append(lat, g.at.Sub(t0))
	}
	fmt.Fprintf(out, "\nhandoff to a waiter of another handle (%s): release start to grant %s\n", w, dist(lat))
	return nil
}

func waitWaiting(ctx context.Context, s *amqpsem.Semaphore) error {
	for {
		st, err := s.Stats(ctx)
		if err != nil {
			return err
		}
		if st.Waiting > 0 {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
}

// dist summarizes durations: median [p10-p90], p99.
func dist(d []time.Duration) string {
	if len(d) == 0 {
		return "none"
	}
	slices.Sort(d)
	q := func(p float64) time.Duration {
		return d[min(len(d)-1, int(p*float64(len(d))))].Round(10 * time.Microsecond)
	}
	return fmt.Sprintf("median %v [p10 %v, p90 %v], p99 %v (n=%d)", q(0.5), q(0.1), q(0.9), q(0.99), len(d))
}
