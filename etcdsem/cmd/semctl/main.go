// Command semctl administers etcdsem semaphores: the operator's side.
//
//	semctl -endpoints 127.0.0.1:2379 status NAME       capacity, holders (units, age, token, lease TTL left), waiters in order
//	semctl -endpoints 127.0.0.1:2379 resize NAME N     set the capacity; holders are never revoked
//	semctl -endpoints 127.0.0.1:2379 break NAME REASON fail every waiter and later acquire
//	semctl -endpoints 127.0.0.1:2379 repair NAME       undo break
//	semctl -endpoints 127.0.0.1:2379 [-for 1m] watch NAME  print grants and releases as they happen
//
// It starts nothing: without -endpoints it fails.
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

	"github.com/fairsem/semaphore/etcdsem"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "semctl:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, args []string) error {
	fs := flag.NewFlagSet("semctl", flag.ContinueOnError)
	endpoints := fs.String("endpoints", "", "etcd client URLs, comma-separated (required)")
	timeout := fs.Duration("timeout", 10*time.Second, "bound on each command's RPCs")
	watchFor := fs.Duration("for", 0, "watch: stop after this long (default: until interrupted)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *endpoints == "" {
		return errors.New("-endpoints is required: semctl starts nothing and talks to an existing etcd")
	}
	rest := fs.Args()
	if len(rest) < 2 {
		return errors.New("usage: semctl -endpoints URLS status|resize|break|repair|watch NAME [ARG]")
	}
	cmd, name := rest[0], rest[1]
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(*endpoints, ","), DialTimeout: *timeout, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	rctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	s, err := etcdsem.New(rctx, cli, name)
	if err != nil {
		return err
	}
	defer s.Close()
	switch cmd {
	case "status":
		return status(rctx, out, cli, s)
	case "resize":
		if len(rest) != 3 {
			return errors.New("usage: resize NAME N")
		}
		c, err := strconv.ParseInt(rest[2], 10, 64)
		if err != nil || c < 0 {
			return fmt.Errorf("resize: capacity %q is not a non-negative integer", rest[2])
		}
		if err := s.Resize(rctx, c); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: capacity set to %d\n", name, c)
		return nil
	case "break":
		if len(rest) != 3 {
			return errors.New("usage: break NAME REASON")
		}
		if err := s.Break(rctx, errors.New(rest[2])); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: broken: %s\n", name, rest[2])
		return nil
	case "repair":
		if err := s.Repair(rctx); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: repaired\n", name)
		return nil
	case "watch":
		wctx := ctx
		if *watchFor > 0 {
			var wcancel context.CancelFunc
			wctx, wcancel = context.WithTimeout(ctx, *watchFor)
			defer wcancel()
		}
		return watch(wctx, out, cli, s)
	}
	return fmt.Errorf("unknown command %q", cmd)
}

func status(ctx context.Context, out io.Writer, cli *clientv3.Client, s *etcdsem.Semaphore) error {
	st, err := s.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: capacity %d, %d units held by %d holders, %d waiters (revision %d)\n",
		s.Name(), st.Capacity, st.Held, len(st.Holders), len(st.Waiters), st.Revision)
	if st.Broken {
		fmt.Fprintf(out, "BROKEN: %s\n", st.Reason)
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
		fmt.Fprintf(tw, "holder\t%d\t%v\t%d\t%s\t%s\t%s\n", e.Units, e.Age.Round(time.Millisecond), e.Token, ttl, e.Client, e.Key)
	}
	for i, e := range st.Waiters {
		fmt.Fprintf(tw, "waiter %d\t%d\t%v\t%d\t\t%s\t%s\n", i+1, e.Units, e.Age.Round(time.Millisecond), e.Token, e.Client, e.Key)
	}
	return tw.Flush()
}

// watch prints every change of holders and waiters, from the handle's view.
func watch(ctx context.Context, out io.Writer, cli *clientv3.Client, s *etcdsem.Semaphore) error {
	prev, err := s.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "watching %s: capacity %d, %d held, %d waiting\n", s.Name(), prev.Capacity, prev.Held, len(prev.Waiters))
	for resp := range cli.Watch(clientv3.WithRequireLeader(ctx), etcdsem.KeyPrefix(s.Name()), clientv3.WithPrefix(), clientv3.WithRev(prev.Revision+1)) {
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
				fmt.Fprintf(out, "%s granted %d units to %s (token %d)\n", time.Now().Format("15:04:05.000"), e.Units, e.Client, e.Token)
			}
		}
		for _, e := range prev.Holders {
			if !now[e.Token] {
				fmt.Fprintf(out, "%s released %d units of %s (token %d)\n", time.Now().Format("15:04:05.000"), e.Units, e.Client, e.Token)
			}
		}
		if st.Capacity != prev.Capacity || st.Broken != prev.Broken {
			fmt.Fprintf(out, "%s capacity %d, broken %v %s\n", time.Now().Format("15:04:05.000"), st.Capacity, st.Broken, st.Reason)
		}
		prev = st
	}
	if ctx.Err() != nil {
		return nil // interrupted, or -for elapsed: the watch was meant to end
	}
	return errors.New("watch: the watch ended")
}
