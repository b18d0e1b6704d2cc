// Command jobs shows the distributed semaphore at work across processes: three
// worker processes share "at most 4 units of job capacity" through etcd. One
// worker is killed while it holds units (they come back after its lease TTL);
// another is frozen while it holds units, loses them, and on waking tries to
// write to a shared resource with its stale fencing token, which the resource
// rejects. It prints a timeline and the audit of etcd's history, and exits.
//
//	go run ./examples/jobs                       # starts a throwaway etcd
//	go run ./examples/jobs -endpoints 127.0.0.1:2379
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fairsem/semaphore/etcdsem"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

const (
	workerEnv = "JOBS_EXAMPLE_WORKER" // the role of a worker process
	ttl       = 2 * time.Second
	capacity  = 4
)

func main() {
	if role := os.Getenv(workerEnv); role != "" {
		if err := worker(role, os.Getenv("JOBS_EXAMPLE_ENDPOINTS"), os.Getenv("JOBS_EXAMPLE_NAME")); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		return
	}
	endpoints := flag.String("endpoints", "", "etcd client URLs, comma-separated (default: start a throwaway embedded etcd)")
	flag.Parse()
	if err := run(os.Stdout, *endpoints); err != nil {
		fmt.Fprintln(os.Stderr, "jobs:", err)
		os.Exit(1)
	}
}

// run is the coordinator: it starts the workers, injects the faults and audits.
func run(out io.Writer, endpoints string) error {
	if endpoints == "" {
		e, err := startEtcd()
		if err != nil {
			return err
		}
		defer e.Close()
		endpoints = e.Config().ListenClientUrls[0].String()
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(endpoints, ","), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := fmt.Sprintf("examples/jobs-%d", time.Now().UnixNano())
	if _, err := cli.Put(ctx, name+"-resource/token", fence(0)); err != nil {
		return err
	}
	sem, err := etcdsem.New(ctx, cli, name, etcdsem.WithCapacity(capacity))
	if err != nil {
		return err
	}
	defer sem.Close()

	start := time.Now()
	tl := &timeline{out: out, start: start}
	tl.say("coordinator", "semaphore %q, capacity %d, worker lease TTL %v", name, capacity, ttl)

	crash := startWorker(tl, "crash", endpoints, name)
	crash.waitFor("holding")
	stale := startWorker(tl, "stale", endpoints, name)
	stale.waitFor("holding")
	steady := startWorker(tl, "steady", endpoints, name)
	steady.waitFor("waiting")

	tl.say("coordinator", "SIGKILL the crash worker while it holds 2 units")
	killed := time.Now()
	crash.signal(syscall.SIGKILL)
	crash.wait()
	steady.waitFor("granted")
	tl.say("coordinator", "the crash worker's units came back %v after the kill (TTL %v)", time.Since(killed).Round(10*time.Millisecond), ttl)

	tl.say("coordinator", "SIGSTOP the stale worker while it holds 2 units")
	stale.signal(syscall.SIGSTOP)
	frozen := time.Now()
	steady.waitFor("job 1")
	tl.say("coordinator", "the frozen worker's units came back %v after the freeze; it does not know yet", time.Since(frozen).Round(10*time.Millisecond))
	steady.waitFor("done")
	steady.wait()
	tl.say("coordinator", "SIGCONT the stale worker: it writes with its old token")
	stale.signal(syscall.SIGCONT)
	stale.waitFor("rejected")
	stale.wait()

	rep, err := etcdsem.Audit(ctx, cli, name)
	if err != nil {
		return err
	}
	verdict := "clean"
	if len(rep.Violations) > 0 {
		verdict = strings.Join(rep.Violations, "; ")
	}
	tl.say("coordinator", "audit of %d revisions, %d grants: %s", rep.Revisions, rep.Grants, verdict)
	if verdict != "clean" {
		return errors.New("audit found violations")
	}
	return nil
}

// worker runs one role in its own process, printing one line per event.
func worker(role, endpoints, name string) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(endpoints, ","), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx := context.Background()
	sem, err := etcdsem.New(ctx, cli, name, etcdsem.WithTTL(ttl), etcdsem.WithClientName(role))
	if err != nil {
		return err
	}
	defer sem.Close()
	switch role {
	case "crash", "stale":
		u, err := sem.Acquire(ctx, 2)
		if err != nil {
			return err
		}
		if err := write(ctx, cli, name, u.Token(), role); err != nil {
			return err
		}
		fmt.Printf("holding 2 units, token %d; wrote the resource\n", u.Token())
		if role == "crash" {
			select {} // until killed
		}
		// Frozen here by the coordinator; on waking, write at once without
		// looking at Lost, as a process paused mid-operation would.
		for {
			time.Sleep(50 * time.Millisecond)
			select {
			case <-u.Lost():
			default:
				continue
			}
			break
		}
		err = write(ctx, cli, name, u.Token(), role)
		fmt.Printf("woke up and wrote with token %d: rejected=%v (%v)\n", u.Token(), err != nil, err)
		if err == nil {
			return errors.New("a stale write was accepted")
		}
		return nil
	case "steady":
		fmt.Println("waiting for 2 units")
		for job := 0; job < 4; job++ {
			n := int64(3) // after the first job, more than the frozen worker leaves
			if job == 0 {
				n = 2
			}
			u, err := sem.Acquire(ctx, n)
			if errors.Is(err, etcdsem.ErrLost) {
				// This worker's own lease ran out (a stalled machine): its
				// place is gone, so queue again.
				fmt.Println("lost my place in the queue; queueing again:", err)
				job--
				continue
			}
			if err != nil {
				return err
			}
			fmt.Printf("granted %d units for job %d, token %d\n", n, job, u.Token())
			if err := write(ctx, cli, name, u.Token(), fmt.Sprintf("steady job %d", job)); err != nil {
				return err
			}
			time.Sleep(time.Second)
			if err := u.Release(ctx); err != nil {
				return err
			}
		}
		fmt.Println("done")
		return nil
	}
	return fmt.Errorf("unknown role %q", role)
}

// write stores data in the shared resource if token is at least the highest
// token it has accepted: the resource's side of fencing.
func write(ctx context.Context, cli *clientv3.Client, name string, token int64, data string) error {
	key := name + "-resource"
	resp, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(key+"/token"), "<", fence(token+1))).
		Then(clientv3.OpPut(key+"/token", fence(token)), clientv3.OpPut(key+"/data", data)).
		Else(clientv3.OpGet(key + "/token")).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		seen, _ := strconv.ParseInt(string(resp.Responses[0].GetResponseRange().Kvs[0].Value), 10, 64)
		return fmt.Errorf("token %d is older than token %d already seen", token, seen)
	}
	return nil
}

func fence(token int64) string { return fmt.Sprintf("%020d", token) }

// timeline prints events with the time since the start.
type timeline struct {
	mu    sync.Mutex
	out   io.Writer
	start time.Time
}

func (tl *timeline) say(who, format string, args ...any) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	fmt.Fprintf(tl.out, "%6.2fs  %-11s %s\n", time.Since(tl.start).Seconds(), who, fmt.Sprintf(format, args...))
}

// proc is a worker process whose output lines go to the timeline.
type proc struct {
	role  string
	cmd   *exec.Cmd
	lines chan string
	done  chan error
}

func startWorker(tl *timeline, role, endpoints, name string) *proc {
	p := &proc{role: role, lines: make(chan string, 100), done: make(chan error, 1)}
	p.cmd = exec.Command(os.Args[0])
	p.cmd.Env = append(os.Environ(), workerEnv+"="+role, "JOBS_EXAMPLE_ENDPOINTS="+endpoints, "JOBS_EXAMPLE_NAME="+name)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		panic(err)
	}
	p.cmd.Stderr = os.Stderr
	if err := p.cmd.Start(); err != nil {
		panic(err)
	}
	tl.say(role, "started (pid %d)", p.cmd.Process.Pid)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			tl.say(role, "%s", sc.Text())
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.done <- p.cmd.Wait()
	}()
	return p
}

// waitFor waits for an output line containing s.
func (p *proc) waitFor(s string) {
	for line := range p.lines {
		if strings.Contains(line, s) {
			return
		}
	}
	panic(fmt.Sprintf("worker %s exited before printing %q", p.role, s))
}

func (p *proc) signal(sig syscall.Signal) { _ = p.cmd.Process.Signal(sig) }

func (p *proc) wait() {
	for range p.lines {
	}
	<-p.done
}

// startEtcd starts a throwaway single-member etcd on free 127.0.0.1 ports.
func startEtcd() (*embed.Etcd, error) {
	dir, err := os.MkdirTemp("", "jobs-example-etcd-")
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cu, pu := freeURL(), freeURL()
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.TickMs, cfg.ElectionMs = 50, 500
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case <-time.After(30 * time.Second):
		e.Close()
		return nil, errors.New("embedded etcd not ready after 30s")
	}
}

func freeURL() url.URL {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}
