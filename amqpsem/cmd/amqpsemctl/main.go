// Command amqpsemctl administers persistent semaphores in RabbitMQ (amqpsem,
// or any client of the protocol): the operator's side.
//
//	amqpsemctl -url amqp://guest:guest@127.0.0.1:5672/ status NAME    slots, and which are held (removed slots still held too)
//	amqpsemctl -url URL create NAME N      give a semaphore with no slots N slots
//	amqpsemctl -url URL add NAME N         add N slots above the highest
//	amqpsemctl -url URL remove NAME N      remove the N highest slots (holders keep them until they release)
//	amqpsemctl -url URL resize NAME N      add or remove slots until there are N
//	amqpsemctl -url URL destroy NAME       remove every slot
//	amqpsemctl -url URL wait NAME SLOTS    wait (up to -timeout) until no client holds the slots, e.g. 4,5
//
// Every change is made under the semaphore's administration mutex, in the
// protocol's order. The command checks every argument, the name included,
// before it connects; a bad one, or a failure, is one line on stderr and exit
// status 1. Output names the semaphore quoted, as Go quotes strings. It starts
// nothing: without -url it fails.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/fairsem/semaphore/amqpsem"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := runMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: amqpsemctl -url URL [-timeout D] COMMAND NAME [ARG]
  status NAME        slots, the slots held (by any client of the protocol), removed slots still held
  create NAME N      give a semaphore that has no slots N slots (0 to %[1]d)
  add NAME N         add N slots above the highest
  remove NAME N      remove the N highest slots; their holders keep them until they release
  resize NAME N      add or remove slots until there are N
  destroy NAME       remove every slot; holders keep theirs until they release
  wait NAME SLOTS    wait until no client holds SLOTS (comma-separated), e.g. after remove
flags:
  -url URL           the broker, amqp://user:password@host:port/vhost (required)
  -timeout D         bound on the command (default 10s; wait: how long to wait)
`

// runMain runs the command with args and returns its exit status: 0, or 1
// after one line on stderr.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := run(ctx, stdout, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(stdout, usage, amqpsem.MaxSlots)
		return 0
	case err != nil:
		fmt.Fprintln(stderr, "amqpsemctl:", strings.Join(strings.Fields(err.Error()), " "))
		return 1
	}
	return 0
}

type command struct {
	verb  string
	name  string
	n     int
	slots []int
}

var verbs = map[string]string{"status": "", "create": "N", "add": "N", "remove": "N", "resize": "N", "destroy": "", "wait": "SLOTS"}

const verbList = "status, create, add, remove, resize, destroy or wait"

func parseCommand(args []string) (command, error) {
	if len(args) == 0 {
		return command{}, errors.New("missing command: want " + verbList + " (amqpsemctl -h)")
	}
	verb := args[0]
	extra, ok := verbs[verb]
	if !ok {
		return command{}, fmt.Errorf("unknown command %q: want %s (amqpsemctl -h)", verb, verbList)
	}
	want := strings.TrimSpace("NAME " + extra)
	if len(args)-1 != len(strings.Fields(want)) {
		return command{}, fmt.Errorf("%s: want %s, got %d arguments", verb, want, len(args)-1)
	}
	c := command{verb: verb, name: args[1]}
	if err := amqpsem.CheckName(c.name); err != nil {
		return command{}, fmt.Errorf("%s: %w", verb, err)
	}
	switch extra {
	case "N":
		n, err := strconv.Atoi(args[2])
		if err != nil || n < 0 || n > amqpsem.MaxSlots {
			return command{}, fmt.Errorf("%s: %q is not a number of slots in [0, %d]", verb, args[2], amqpsem.MaxSlots)
		}
		c.n = n
	case "SLOTS":
		for _, f := range strings.Split(args[2], ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 || n > amqpsem.MaxSlots {
				return command{}, fmt.Errorf("wait: %q is not a slot in [1, %d]", f, amqpsem.MaxSlots)
			}
			c.slots = append(c.slots, n)
		}
	}
	return c, nil
}

func run(ctx context.Context, out io.Writer, args []string) error {
	fs := flag.NewFlagSet("amqpsemctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	url := fs.String("url", "", "")
	timeout := fs.Duration("timeout", 10*time.Second, "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *timeout <= 0 {
		return fmt.Errorf("-timeout %v: must be positive", *timeout)
	}
	c, err := parseCommand(fs.Args())
	if err != nil {
		return err
	}
	if *url == "" {
		return errors.New("-url is required: amqpsemctl starts nothing and talks to an existing broker")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	s, err := amqpsem.New(ctx, *url, c.name, amqpsem.WithWakeup(amqpsem.WakePolling))
	if err != nil {
		return err
	}
	defer s.Close()
	switch c.verb {
	case "status":
		return status(ctx, out, s)
	case "create":
		n, err := s.Slots(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("create: %q already has %s: use add, remove or resize", c.name, slotCount(n))
		}
		if _, err := s.Resize(ctx, c.n); err != nil {
			return err
		}
		fmt.Fprintf(out, "%q: created with %s\n", c.name, slotCount(c.n))
	case "add":
		n, err := s.AddSlots(ctx, c.n)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%q: %s\n", c.name, slotCount(n))
	case "remove", "resize", "destroy":
		var removed []int
		switch c.verb {
		case "remove":
			removed, err = s.RemoveSlots(ctx, c.n)
		case "resize":
			removed, err = s.Resize(ctx, c.n)
		default:
			removed, err = s.Destroy(ctx)
		}
		if err != nil {
			return err
		}
		n, err := s.Slots(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%q: %s", c.name, slotCount(n))
		if len(removed) > 0 {
			fmt.Fprintf(out, "; removed %s (holders keep them until they release: amqpsemctl -url URL wait %s %s)", join(removed), shellQuote(c.name), join(removed))
		}
		fmt.Fprintln(out)
	case "wait":
		if err := s.WaitReleased(ctx, c.slots); err != nil {
			return err
		}
		fmt.Fprintf(out, "%q: no client holds slots %s\n", c.name, join(c.slots))
	}
	return nil
}

func status(ctx context.Context, out io.Writer, s *amqpsem.Semaphore) error {
	st, err := s.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%q: %s, %d held\n", s.Name(), slotCount(st.Slots), st.Held)
	var free, held, removed []int
	isHeld := map[int]bool{}
	for _, sl := range st.Holders {
		isHeld[sl] = true
		if sl > st.Slots {
			removed = append(removed, sl)
		}
	}
	for sl := 1; sl <= st.Slots; sl++ {
		if isHeld[sl] {
			held = append(held, sl)
		} else {
			free = append(free, sl)
		}
	}
	fmt.Fprintf(out, "held:  %s\nfree:  %s\n", join(held), join(free))
	if len(removed) > 0 {
		fmt.Fprintf(out, "removed but still held: %s\n", join(removed))
	}
	return nil
}

// shellQuote quotes s for a POSIX shell: in single quotes, each single quote
// in s closing the quotes, escaped, and opening them again.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func slotCount(n int) string {
	if n == 1 {
		return "1 slot"
	}
	return strconv.Itoa(n) + " slots"
}

func join(slots []int) string {
	if len(slots) == 0 {
		return "none"
	}
	parts := make([]string, len(slots))
	for i, sl := range slots {
		parts[i] = strconv.Itoa(sl)
	}
	return strings.Join(parts, ",")
}
