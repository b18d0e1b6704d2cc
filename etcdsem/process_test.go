//go:build linux

package etcdsem

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdProc is a real etcd server process: this test binary re-run as etcd
// (see TestMain), which never outlives the test (children_test.go).
type etcdProc struct {
	t      testing.TB
	name   string
	args   []string
	client string // client URL
	peer   url.URL
	log    string
	cmd    *exec.Cmd
	wait   chan error // the exit of cmd
}

// newCluster prepares n members (not started) with data under the test's
// temporary directory.
func newCluster(t testing.TB, n int) []*etcdProc {
	procs := make([]*etcdProc, n)
	var initial []string
	for i := range procs {
		p := &etcdProc{t: t, name: fmt.Sprintf("p%d", i), peer: freeURL(t)}
		cu := freeURL(t)
		p.client = cu.String()
		initial = append(initial, p.name+"="+p.peer.String())
		procs[i] = p
	}
	dir := t.TempDir()
	for _, p := range procs {
		p.log = filepath.Join(dir, p.name+".log")
		p.args = []string{
			"etcd",
			"--name", p.name,
			"--data-dir", filepath.Join(dir, p.name),
			"--listen-client-urls", p.client, "--advertise-client-urls", p.client,
			"--listen-peer-urls", p.peer.String(), "--initial-advertise-peer-urls", p.peer.String(),
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-token", "etcdsem-test",
			"--heartbeat-interval", "50", "--election-timeout", "500",
			"--log-level", "error",
		}
	}
	t.Cleanup(func() {
		for _, p := range procs {
			p.kill()
		}
	})
	return procs
}

func (p *etcdProc) start() {
	p.t.Helper()
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(p.t, err)
	defer logf.Close()
	p.cmd = exec.Command(os.Args[0], p.args[1:]...)
	p.cmd.Args[0] = p.args[0]
	p.cmd.Env = append(os.Environ(), etcdChildEnv+"=1")
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	require.NoError(p.t, startChild(p.t, p.cmd))
	p.wait = make(chan error, 1)
	go func(cmd *exec.Cmd, ch chan error) { ch <- cmd.Wait() }(p.cmd, p.wait)
}

// kill sends SIGKILL and waits for the exit. It is a no-op if not running.
func (p *etcdProc) kill() {
	if p.cmd == nil {
		return
	}
	killGroup(p.cmd.Process.Pid) // SIGKILL ends it stopped or not
	<-p.wait
	p.cmd = nil
}

// stop sends SIGSTOP and waits until every thread of the server is stopped,
// so that no request sent afterwards is served before cont.
func (p *etcdProc) stop() {
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGSTOP))
	tasks := fmt.Sprintf("/proc/%d/task", p.cmd.Process.Pid)
	require.Eventually(p.t, func() bool {
		ids, err := os.ReadDir(tasks)
		if err != nil {
			return false
		}
		for _, id := range ids {
			stat, err := os.ReadFile(filepath.Join(tasks, id.Name(), "stat"))
			// The state follows the parenthesized command name: "T" is stopped.
			if err != nil || !strings.HasPrefix(string(stat[strings.LastIndexByte(string(stat), ')')+1:]), " T") {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "etcd %s not stopped", p.name)
}

func (p *etcdProc) cont() { require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGCONT)) }

// waitHealthy waits until every endpoint answers a linearizable read.
func waitHealthy(t testing.TB, procs ...*etcdProc) {
	t.Helper()
	for _, p := range procs {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{p.client}, DialTimeout: time.Second, Logger: zap.NewNop()})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, err := cli.Get(ctx, "health")
			return err == nil
		}, 90*time.Second, 100*time.Millisecond, "etcd %s not healthy; log in %s", p.name, p.log)
		cli.Close()
	}
}

// leader returns the member that leads.
func leader(t testing.TB, procs []*etcdProc) *etcdProc {
	t.Helper()
	var found *etcdProc
	require.Eventually(t, func() bool {
		for _, p := range procs {
			if p.cmd == nil {
				continue
			}
			cli, err := clientv3.New(clientv3.Config{Endpoints: []string{p.client}, DialTimeout: time.Second, Logger: zap.NewNop()})
			if err != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := cli.Status(ctx, p.client)
			cancel()
			cli.Close()
			if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
				found = p
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond)
	return found
}

// processClient returns a client of the endpoints that notices a silent
// (stopped) server within a few seconds.
func processClient(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
		Logger:               zap.NewNop(),
	})
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	return cli
}
