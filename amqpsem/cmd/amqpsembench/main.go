// Command amqpsembench measures amqpsem against a RabbitMQ node it starts
// (amqptest: the local rabbitmq-server, with the event exchange), or one given
// with -url, across real OS processes:
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
	"flag"
	"fmt"
	"log"
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
)

const workerEnv = "AMQPSEMBENCH_WORKER"

var (
	url        = flag.String("url", "", "a broker to use (default: start one with amqptest)")
	quick      = flag.Bool("quick", false, "a smoke run: short phases, 1 and 2 processes")
	duration   = flag.Duration("duration", 3*time.Second, "each throughput run")
	goroutines = flag.Int("goroutines", 4, "goroutines per worker process")
	slots      = flag.Int("slots", 4, "slots of the throughput semaphore")
	hold       = flag.Duration("hold", time.Millisecond, "how long a grant is held")
	rounds     = flag.Int("rounds", 200, "uncontended acquire and release pairs")
	handoffs   = flag.Int("handoffs", 20, "handoffs measured per wakeup mode")
)

func main() {
	if spec := os.Getenv(workerEnv); spec != "" {
		worker(spec)
		return
	}
	flag.Parse()
	procs := []int{1, 4, 8}
	if *quick {
		*duration, *rounds, *handoffs, procs = 500*time.Millisecond, 20, 3, []int{1, 2}
	}
	u := *url
	if u == "" {
		dir, err := os.MkdirTemp("", "amqpsembench-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		b, err := amqptest.Start(amqptest.Options{Dir: dir, Plugins: []string{"rabbitmq_event_exchange"}})
		if err != nil {
			log.Fatal(err)
		}
		defer b.Stop()
		u = b.URL
		fmt.Printf("broker: a RabbitMQ node started for this run (amqptest), event exchange enabled\n")
	}
	ctx := context.Background()
	uncontended(ctx, u)
	for _, p := range procs {
		throughput(ctx, u, p)
	}
	for _, w := range []amqpsem.Wakeup{amqpsem.WakeEvents, amqpsem.WakePolling} {
		handoff(ctx, u, w)
	}
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func name(what string) string {
	return fmt.Sprintf("amqpsembench.%s.%d.%d", what, os.Getpid(), time.Now().UnixNano())
}

func uncontended(ctx context.Context, u string) {
	s, err := amqpsem.New(ctx, u, name("uncontended"), amqpsem.WithSlots(1))
	must(err)
	defer s.Close()
	var acq, rel, both []time.Duration
	for i := range *rounds + 5 {
		t0 := time.Now()
		un, err := s.Acquire(ctx, 1)
		must(err)
		t1 := time.Now()
		must(un.Release(ctx))
		t2 := time.Now()
		if i >= 5 { // the first rounds dial the holding connection
			acq, rel, both = append(acq, t1.Sub(t0)), append(rel, t2.Sub(t1)), append(both, t2.Sub(t0))
		}
	}
	fmt.Printf("\nuncontended, 1 slot, %d rounds: acquire %s; release %s; acquire+release %s\n", *rounds, dist(acq), dist(rel), dist(both))
}

// A grantRecord is one acquire of a worker: when it was called and granted.
type grantRecord struct {
	Proc          int
	Arrive, Grant int64 // unix nanoseconds
}

func throughput(ctx context.Context, u string, procs int) {
	n := name(fmt.Sprintf("throughput%d", procs))
	s, err := amqpsem.New(ctx, u, n, amqpsem.WithSlots(*slots))
	must(err)
	defer s.Close()
	start := time.Now().Add(2 * time.Second).UnixNano() // every worker connected by then
	var mu sync.Mutex
	var all []grantRecord
	var wg sync.WaitGroup
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spec := strings.Join([]string{u, n, strconv.Itoa(p), strconv.Itoa(*goroutines), strconv.FormatInt(start, 10), duration.String(), hold.String()}, " ")
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), workerEnv+"="+spec)
			cmd.Stderr = os.Stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			out, err := cmd.StdoutPipe()
			must(err)
			must(cmd.Start())
			var recs []grantRecord
			must(json.NewDecoder(bufio.NewReader(out)).Decode(&recs))
			must(cmd.Wait())
			mu.Lock()
			all = append(all, recs...)
			mu.Unlock()
		}()
	}
	wg.Wait()
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
	fmt.Printf("\nthroughput: %d processes x %d goroutines, %d slots, hold %v, %v: %.0f grants/s; acquire latency %s; grants per process %v; %.1f%% of grants overtook an earlier waiter of another process\n",
		procs, *goroutines, *slots, *hold, *duration, float64(len(all))/duration.Seconds(), dist(lat), perProc, share)
}

func worker(spec string) {
	f := strings.Fields(spec) // URL NAME PROC GOROUTINES START DURATION HOLD
	proc, _ := strconv.Atoi(f[2])
	g, _ := strconv.Atoi(f[3])
	startNs, _ := strconv.ParseInt(f[4], 10, 64)
	d, _ := time.ParseDuration(f[5])
	h, _ := time.ParseDuration(f[6])
	ctx := context.Background()
	s, err := amqpsem.New(ctx, f[0], f[1])
	must(err)
	defer s.Close()
	// Dial the holding connection before the start.
	un, err := s.Acquire(ctx, 0)
	must(err)
	must(un.Release(ctx))
	time.Sleep(time.Until(time.Unix(0, startNs)))
	end := time.Now().Add(d)
	var mu sync.Mutex
	var recs []grantRecord
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
				must(un.Release(ctx))
				mu.Lock()
				recs = append(recs, grantRecord{Proc: proc, Arrive: arrive.UnixNano(), Grant: granted.UnixNano()})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	must(json.NewEncoder(os.Stdout).Encode(recs))
}

func handoff(ctx context.Context, u string, w amqpsem.Wakeup) {
	n := name("handoff")
	a, err := amqpsem.New(ctx, u, n, amqpsem.WithSlots(1), amqpsem.WithWakeup(w))
	must(err)
	defer a.Close()
	b, err := amqpsem.New(ctx, u, n, amqpsem.WithWakeup(w))
	must(err)
	defer b.Close()
	var lat []time.Duration
	for range *handoffs {
		h, err := a.Acquire(ctx, 1)
		must(err)
		got := make(chan time.Time, 1)
		go func() {
			v, err := b.Acquire(ctx, 1)
			must(err)
			got <- time.Now()
			must(v.Release(ctx))
		}()
		waitWaiting(ctx, b)
		time.Sleep(50 * time.Millisecond) // the waiter has probed and waits
		t0 := time.Now()
		must(h.Release(ctx))
		lat = append(lat, (<-got).Sub(t0))
	}
	fmt.Printf("\nhandoff to a waiter of another handle (%s): release start to grant %s\n", w, dist(lat))
}

func waitWaiting(ctx context.Context, s *amqpsem.Semaphore) {
	for {
		st, err := s.Stats(ctx)
		must(err)
		if st.Waiting > 0 {
			return
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
