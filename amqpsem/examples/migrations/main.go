// Command migrations shows the persistent semaphore on RabbitMQ at work across
// processes: four worker processes share "at most 2 migrations at once". The
// workers take turns; one is killed (SIGKILL) while it holds a slot, which
// comes back as soon as the broker sees its connection close; an operator
// removes a slot while its holder works, and waits for the holder to give it
// back. It prints a timeline, checks it against the bound, and exits.
//
//	go run ./examples/migrations              # starts a throwaway RabbitMQ node (needs rabbitmq-server installed)
//	go run ./examples/migrations -url amqp://guest:guest@127.0.0.1:5672/
//
// Without -url it runs the local rabbitmq-server (Debian, Ubuntu: apt-get
// install -y rabbitmq-server; the system service may stay stopped) as a node of
// its own under a temporary directory, on 127.0.0.1, and stops it at the end.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fairsem/semaphore/amqpsem"
	"github.com/fairsem/semaphore/amqpsem/amqptest"
)

const (
	workerEnv = "MIGRATIONS_EXAMPLE_WORKER" // URL NAME ROLE: the role of a worker process
	slots     = 2
)

func main() {
	if spec := os.Getenv(workerEnv); spec != "" {
		if err := worker(spec); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		return
	}
	url := flag.String("url", "", "the broker, amqp://user:password@host:port/vhost (default: start a throwaway node)")
	flag.Parse()
	if err := run(os.Stdout, *url); err != nil {
		fmt.Fprintln(os.Stderr, "migrations:", err)
		os.Exit(1)
	}
}

// run is the operator: it starts the workers, kills one, removes a slot, and
// checks the timeline.
func run(out io.Writer, url string) error {
	if url == "" {
		dir, err := os.MkdirTemp("", "amqpsem-example-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		fmt.Fprintln(out, "starting a throwaway RabbitMQ node...")
		b, err := amqptest.Start(amqptest.Options{Dir: dir, Plugins: []string{"rabbitmq_event_exchange"}})
		if errors.Is(err, amqptest.ErrNotInstalled) {
			return fmt.Errorf("%w; or give -url of a broker", err)
		}
		if err != nil {
			return err
		}
		defer b.Stop()
		url = b.URL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := fmt.Sprintf("example.migrations.%d", time.Now().UnixNano())
	op, err := amqpsem.New(ctx, url, name, amqpsem.WithSlots(slots))
	if err != nil {
		return err
	}
	defer op.Close()
	defer op.Destroy(context.WithoutCancel(ctx))
	tl := &timeline{start: time.Now(), out: out}
	tl.say("operator", "semaphore %q created with %d slots", name, slots)

	// Four workers, each migrating for 300ms; at most two at once.
	var wg sync.WaitGroup
	for i := 1; i <= 4; i++ {
		w, err := startWorker(url, name, "migrate", tl, fmt.Sprintf("worker %d", i))
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Wait() }()
	}
	wg.Wait()

	// A worker killed while it holds a slot: the kernel closes its socket, the
	// broker drops its B queue, and the next worker is granted the slot.
	stuck, err := startWorker(url, name, "hold", tl, "worker 5")
	if err != nil {
		return err
	}
	tl.waitFor("worker 5", "holds")
	other, err := startWorker(url, name, "hold", tl, "worker 6")
	if err != nil {
		return err
	}
	tl.waitFor("worker 6", "holds")
	next, err := startWorker(url, name, "migrate", tl, "worker 7")
	if err != nil {
		return err
	}
	tl.waitFor("worker 7", "waits")
	killed := time.Now()
	_ = stuck.Process.Kill()
	_ = stuck.Wait()
	tl.say("worker 5", "%d killed (SIGKILL) while it held its slot", killed.UnixNano())
	tl.waitFor("worker 7", "holds")
	tl.say("operator", "the slot came back %v after the kill", time.Since(killed).Round(time.Millisecond))
	_ = next.Wait()

	// Removing a slot never revokes its holder: worker 6 keeps it, learns of
	// the removal when it verifies, and gives it back; the operator waits.
	removed, err := op.RemoveSlots(ctx, 1)
	if err != nil {
		return err
	}
	tl.say("operator", "removed slot %v; its holder keeps it until it gives it back", removed)
	_ = other.Process.Signal(syscall.SIGUSR1) // tells worker 6 to verify and leave
	if err := op.WaitReleased(ctx, removed); err != nil {
		return err
	}
	tl.say("operator", "no client holds slot %v any more", removed)
	_ = other.Wait()
	st, err := op.Stats(ctx)
	if err != nil {
		return err
	}
	tl.say("operator", "now %d slot(s), %d held", st.Slots, st.Held)
	return tl.check(slots)
}

// startWorker runs this program again as a worker process with role.
func startWorker(url, name, role string, tl *timeline, who string) (*exec.Cmd, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), workerEnv+"="+strings.Join([]string{url, name, role}, " "))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			tl.say(who, "%s", sc.Text())
		}
	}()
	return cmd, nil
}

// worker is a worker process: it takes a slot, works, and gives it back
// ("migrate"), or holds it until SIGUSR1, then verifies and gives it back
// ("hold").
func worker(spec string) error {
	f := strings.Fields(spec)
	url, name, role := f[0], f[1], f[2]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	s, err := amqpsem.New(ctx, url, name)
	if err != nil {
		return err
	}
	defer s.Close()
	u, ok, err := s.TryAcquire(ctx, 1)
	if err != nil {
		return err
	}
	if !ok {
		say("waits")
		if u, err = s.Acquire(ctx, 1); err != nil {
			return err
		}
	}
	slot := strconv.Itoa(u.Slots()[0])
	say("holds slot " + slot)
	if role == "migrate" {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-u.Lost():
			return u.Err() // the slot may be someone else's now: stop
		}
	} else {
		<-usr1
		if err := u.Verify(ctx); errors.Is(err, amqpsem.ErrSlotRemoved) {
			say("verified: its slot was removed")
		} else if err != nil {
			return err
		}
	}
	say("gives slot " + slot + " back") // its use of the slot ends here
	return u.Release(ctx)
}

// say prints a line for the operator, with the time it is said.
func say(what string) { fmt.Println(time.Now().UnixNano(), what) }

// A timeline prints what the operator and the workers say, with the time
// since the start, and records when each worker held a slot, to check the
// bound: a worker holds from the time it says "holds" to the time it says it
// gives the slot back (before it releases), or is killed.
type timeline struct {
	start time.Time
	out   io.Writer

	mu      sync.Mutex
	lines   []string
	edges   []edge // +1 when a worker starts holding, -1 when it stops
	changed chan struct{}
}

type edge struct {
	at    time.Time
	delta int
}

// say records a line of who. A worker's line starts with the time it was
// said, in Unix nanoseconds.
func (t *timeline) say(who, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	at := time.Now()
	if ns, rest, ok := strings.Cut(text, " "); ok {
		if n, err := strconv.ParseInt(ns, 10, 64); err == nil {
			at, text = time.Unix(0, n), rest
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case strings.HasPrefix(text, "holds slot"):
		t.edges = append(t.edges, edge{at, 1})
	case strings.HasPrefix(text, "gives slot"), strings.HasPrefix(text, "killed"):
		t.edges = append(t.edges, edge{at, -1})
	}
	line := fmt.Sprintf("%-9s %s", who+":", text)
	t.lines = append(t.lines, line)
	fmt.Fprintf(t.out, "%6.2fs  %s\n", at.Sub(t.start).Seconds(), line)
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
}

// waitFor waits (up to a minute) until who has said something holding what.
func (t *timeline) waitFor(who, what string) {
	deadline := time.After(time.Minute)
	for {
		t.mu.Lock()
		for _, l := range t.lines {
			if strings.HasPrefix(l, who+":") && strings.Contains(l, what) {
				t.mu.Unlock()
				return
			}
		}
		if t.changed == nil {
			t.changed = make(chan struct{})
		}
		ch := t.changed
		t.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			return
		}
	}
}

// check reports an error if a worker failed or more than bound slots were
// held at once.
func (t *timeline) check(bound int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.lines {
		if strings.Contains(l, "error:") {
			return errors.New("a worker failed: " + l)
		}
	}
	slices.SortStableFunc(t.edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // a use that ends at the instant another starts ends first
	})
	held, peak := 0, 0
	for _, e := range t.edges {
		held += e.delta
		peak = max(peak, held)
	}
	fmt.Fprintf(t.out, "at most %d slots were held at once (the bound is %d)\n", peak, bound)
	if peak > bound {
		return fmt.Errorf("%d slots held at once, more than %d", peak, bound)
	}
	return nil
}
