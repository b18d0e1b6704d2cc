// Command semctl administers etcdsem semaphores: the operator's side.
//
//	semctl -endpoints 127.0.0.1:2379 status NAME       capacity, holders (units, age, token, lease TTL left), waiters in order, processes
//	semctl -endpoints 127.0.0.1:2379 resize NAME N     set the capacity; holders are never revoked
//	semctl -endpoints 127.0.0.1:2379 break NAME REASON fail every waiter and later acquire
//	semctl -endpoints 127.0.0.1:2379 repair NAME       undo break
//	semctl -endpoints 127.0.0.1:2379 drain NAME        wait (up to -timeout) until no units are held
//	semctl -endpoints 127.0.0.1:2379 [-for 1m] watch NAME  print grants and releases as they happen
//
// NAME is any non-empty string (etcdsem escapes it in its keys). It starts
// nothing: without -endpoints it fails. Every argument is checked before it
// connects; a bad one, or a failure, is one line on stderr and exit status 1.
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
	"text/tabwriter"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/etcdsem"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := runMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: semctl -endpoints URLS [-timeout D] COMMAND NAME [ARG]
  status NAME         capacity, holders (units, age, token, lease TTL left), waiters in order,
                      then one line per process: its keys (in block mode, its blocks) and, in
                      block mode, the callers it serves from its blocks as it last reported
                      them (rewritten when they change, at most every 2s: about 3s behind)
  resize NAME N       set the capacity (0 to %d); holders are never revoked
  break NAME REASON   fail every waiter and later acquire until repair
  repair NAME         undo break
  drain NAME          wait (up to -timeout) until no units are held: break, then drain
  watch NAME          print grants and releases as they happen (-for D: stop after D)
flags:
  -endpoints URLS     etcd client URLs, comma-separated (required)
  -timeout D          bound on each command's RPCs (default 10s)
  -for D              watch: stop after D (default: until interrupted)
`

// runMain runs semctl with args and returns its exit status: 0, or 1 after
// one line on stderr.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := run(ctx, stdout, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(stdout, usage, int64(semaphore.MaxUnits))
		return 0
	case err != nil:
		// Errors from etcd's client may span lines; the message stays one.
		fmt.Fprintln(stderr, "semctl:", strings.Join(strings.Fields(err.Error()), " "))
		return 1
	}
	return 0
}

// A command is a checked command line.
type command struct {
	verb     string
	name     string // the semaphore's; never empty
	capacity int64  // resize: in [0, semaphore.MaxUnits]
	reason   string // break: never empty
}

// verbs are the commands and the arguments each takes after NAME.
var verbs = map[string]string{"status": "", "resize": "N", "break": "REASON", "repair": "", "drain": "", "watch": ""}

// parseCommand checks the arguments after the flags.
func parseCommand(args []string) (command, error) {
	if len(args) == 0 {
		return command{}, errors.New("missing command: want status, resize, break, repair, drain or watch (semctl -h)")
	}
	verb := args[0]
	extra, ok := verbs[verb]
	if !ok {
		return command{}, fmt.Errorf("unknown command %q: want status, resize, break, repair, drain or watch (semctl -h)", verb)
	}
	want := strings.TrimSpace("NAME " + extra)
	if len(args)-1 != len(strings.Fields(want)) {
		return command{}, fmt.Errorf("%s: want %s, got %d arguments", verb, want, len(args)-1)
	}
	c := command{verb: verb, name: args[1]}
	if c.name == "" {
		return command{}, fmt.Errorf("%s: the semaphore name is empty", verb)
	}
	switch verb {
	case "resize":
		n, err := strconv.ParseInt(args[2], 10, 64)
		switch {
		case errors.Is(err, strconv.ErrRange) || err == nil && (n < 0 || n > semaphore.MaxUnits):
			return command{}, fmt.Errorf("resize: capacity %s out of range [0, %d]", args[2], int64(semaphore.MaxUnits))
		case err != nil:
			return command{}, fmt.Errorf("resize: capacity %q is not an integer", args[2])
		}
		c.capacity = n
	case "break":
		if args[2] == "" {
			return command{}, errors.New("break: the reason is empty")
		}
		c.reason = args[2]
	}
	return c, nil
}

func run(ctx context.Context, out io.Writer, args []string) error {
	fs := flag.NewFlagSet("semctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // runMain prints the one line
	endpoints := fs.String("endpoints", "", "")
	timeout := fs.Duration("timeout", 10*time.Second, "")
	watchFor := fs.Duration("for", 0, "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *timeout <= 0:
		return fmt.Errorf("-timeout %v: must be positive", *timeout)
	case *watchFor < 0:
		return fmt.Errorf("-for %v: must not be negative", *watchFor)
	}
	c, err := parseCommand(fs.Args())
	if err != nil {
		return err
	}
	if *endpoints == "" {
		return errors.New("-endpoints is required: semctl starts nothing and talks to an existing etcd")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(*endpoints, ","), DialTimeout: *timeout, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	rctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	s, err := etcdsem.New(rctx, cli, c.name)
	if err != nil {
		return err
	}
	defer s.Close()
	switch c.verb {
	case "status":
		return status(rctx, out, cli, s)
	case "resize":
		if err := s.Resize(rctx, c.capacity); err != nil {
			return err
		}
		fmt.Fprintf(out, "%q: capacity set to %d\n", c.name, c.capacity)
	case "break":
		if err := s.Break(rctx, errors.New(c.reason)); err != nil {
			return err
		}
		fmt.Fprintf(out, "%q: broken: %q\n", c.name, c.reason)
	case "repair":
		if err := s.Repair(rctx); err != nil {
			return err
		}
		fmt.Fprintf(out, "%q: repaired\n", c.name)
	case "drain":
		if err := s.Drain(rctx); err != nil {
			return err
		}
		fmt.Fprintf(out, "%q: drained: no units held\n", c.name)
	case "watch":
		wctx := ctx
		if *watchFor > 0 {
			var wcancel context.CancelFunc
			wctx, wcancel = context.WithTimeout(ctx, *watchFor)
			defer wcancel()
		}
		return watch(wctx, out, cli, s)
	}
	return nil
}

func status(ctx context.Context, out io.Writer, cli *clientv3.Client, s *etcdsem.Semaphore) error {
	st, err := s.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%q: capacity %d, %d units held by %d holders, %d waiters (revision %d)\n",
		s.Name(), st.Capacity, st.Held, len(st.Holders), len(st.Waiters), st.Revision)
	if st.Broken {
		fmt.Fprintf(out, "BROKEN: %q\n", st.Reason)
	}
	if st.Held > st.Capacity {
		fmt.Fprintf(out, "holders exceed the capacity after a shrink; nobody is granted until they fit\n")
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tUNITS\tAGE\tTOKEN\tLEASE TTL\tCLIENT\tKEY")
	for _, e := range st.Holders {
		ttl := "?"
		if d, err := etcdsem.LeaseTTL(ctx, cli, e.Lease); err == nil {
			ttl = d.String()
		}
		fmt.Fprintf(tw, "holder\t%d\t%v\t%d\t%s\t%q\t%s\n", e.Units, e.Age.Round(time.Millisecond), e.Token, ttl, e.Client, e.Key)
	}
	for i, e := range st.Waiters {
		fmt.Fprintf(tw, "waiter %d\t%d\t%v\t%d\t\t%q\t%s\n", i+1, e.Units, e.Age.Round(time.Millisecond), e.Token, e.Client, e.Key)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return handles(out, st)
}

// handles prints one line per handle (one lease: a process's handle), in the
// order of its oldest key, then the handles with a report and no key: the
// keys it holds (in block mode, its blocks), those it waits with, and in block
// mode the callers it serves from its blocks, as of its last report.
func handles(out io.Writer, st etcdsem.Stats) error {
	type handle struct {
		client         string
		keys, waiting  int
		held, awaiting int64
		report         *etcdsem.Report
	}
	by := map[int64]*handle{}
	var leases []int64
	handleOf := func(lease int64, client string) *handle {
		h := by[lease]
		if h == nil {
			h = &handle{client: client}
			by[lease] = h
			leases = append(leases, lease)
		}
		return h
	}
	for _, e := range st.Holders {
		h := handleOf(e.Lease, e.Client)
		h.keys++
		h.held += e.Units
	}
	for _, e := range st.Waiters {
		h := handleOf(e.Lease, e.Client)
		h.waiting++
		h.awaiting += e.Units
	}
	for i, r := range st.Reports {
		handleOf(r.Lease, r.Client).report = &st.Reports[i]
	}
	if len(leases) == 0 {
		return nil
	}
	fmt.Fprintf(out, "%d handles (processes; a block-mode handle holds its units as blocks and reports the callers it serves from them):\n", len(leases))
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tLEASE\tKEYS\tUNITS\tWAITING KEYS\tWAITING UNITS\tCALLERS OF ITS BLOCKS\tCLIENT")
	for _, l := range leases {
		h := by[l]
		callers := "no report: plain mode, or none written yet"
		if r := h.report; r != nil {
			callers = fmt.Sprintf("%d holding %d units, %d waiting for %d units, blocks of %d units, reported %v ago",
				r.Holders, r.Held, r.Waiters, r.Awaited, r.Blocks, r.Age.Round(time.Millisecond))
		}
		fmt.Fprintf(tw, "handle\t%x\t%d\t%d\t%d\t%d\t%s\t%q\n", l, h.keys, h.held, h.waiting, h.awaiting, callers, h.client)
	}
	return tw.Flush()
}

// watch prints every change of holders and waiters, from the handle's view.
func watch(ctx context.Context, out io.Writer, cli *clientv3.Client, s *etcdsem.Semaphore) error {
	prev, err := s.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "watching %q: capacity %d, %d held, %d waiting\n", s.Name(), prev.Capacity, prev.Held, len(prev.Waiters))
	for resp := range cli.Watch(clientv3.WithRequireLeader(ctx), etcdsem.KeyPrefix(s.Name()), clientv3.WithRange(etcdsem.ReportPrefix(s.Name())), clientv3.WithRev(prev.Revision+1)) {
		if err := resp.Err(); err != nil {
			return err
		}
		st, err := s.Stats(ctx)
		if err != nil {
			break
		}
		was := map[int64]bool{}
		for _, e := range prev.Holders {
			was[e.Token] = true
		}
		now := map[int64]bool{}
		for _, e := range st.Holders {
			now[e.Token] = true
			if !was[e.Token] {
				fmt.Fprintf(out, "%s granted %d units to %q (token %d)\n", time.Now().Format("15:04:05.000"), e.Units, e.Client, e.Token)
			}
		}
		for _, e := range prev.Holders {
			if !now[e.Token] {
				fmt.Fprintf(out, "%s released %d units of %q (token %d)\n", time.Now().Format("15:04:05.000"), e.Units, e.Client, e.Token)
			}
		}
		if st.Capacity != prev.Capacity {
			fmt.Fprintf(out, "%s capacity %d\n", time.Now().Format("15:04:05.000"), st.Capacity)
		}
		switch {
		case st.Broken && (!prev.Broken || st.Reason != prev.Reason):
			fmt.Fprintf(out, "%s broken: %q\n", time.Now().Format("15:04:05.000"), st.Reason)
		case !st.Broken && prev.Broken:
			fmt.Fprintf(out, "%s repaired\n", time.Now().Format("15:04:05.000"))
		}
		prev = st
	}
	if ctx.Err() != nil {
		return nil // interrupted, or -for elapsed: the watch was meant to end
	}
	return errors.New("watch: the watch ended")
}
