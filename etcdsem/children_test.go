//go:build linux

package etcdsem

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/internal/fulltest"
)

// The processes a test starts (etcd members, client processes) never
// outlive the test binary: each runs in a process group of its own, which the
// test's cleanup kills; the watchdog kills every group left shortly before
// the binary's -test.timeout (a test that never ends runs no cleanup); each
// child is sent SIGKILL when the thread that started it dies (Pdeathsig); and
// an etcd member also exits once its parent is gone (watchParent).
var children = struct {
	sync.Mutex
	groups map[int]bool // process group ids of children running
}{groups: map[int]bool{}}

// startChild starts cmd in a process group of its own and kills the group
// when the test ends.
func startChild(t testing.TB, cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	pgid := cmd.Process.Pid
	children.Lock()
	children.groups[pgid] = true
	children.Unlock()
	t.Cleanup(func() { killGroup(pgid) })
	return nil
}

// killGroup kills the process group pgid, stopped or not.
func killGroup(pgid int) {
	children.Lock()
	defer children.Unlock()
	if children.groups[pgid] {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		delete(children.groups, pgid)
	}
}

// killChildren kills every process group a test started and did not end.
func killChildren() int {
	children.Lock()
	defer children.Unlock()
	for pgid := range children.groups {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	n := len(children.groups)
	clear(children.groups)
	return n
}

// watchParent exits the process once its parent is gone (it was reparented),
// whatever killed the parent.
func watchParent() {
	ppid := os.Getppid()
	go func() {
		for range time.Tick(200 * time.Millisecond) {
			if os.Getppid() != ppid {
				os.Exit(1)
			}
		}
	}()
}

// hangEnv makes TestChildren_HelperHangsWithAStoppedMember run: it starts an
// etcd member, stops it, prints its pid and never ends.
const hangEnv = "ETCDSEM_TEST_HANG"

func TestChildren_HelperHangsWithAStoppedMember(t *testing.T) {
	if os.Getenv(hangEnv) == "" {
		t.Skip("run by TestChildren_NoMemberOutlivesATestBinaryThatTimesOut")
	}
	p := newCluster(t, 1)[0]
	p.start()
	p.stop()
	fmt.Println("member", p.cmd.Process.Pid)
	select {}
}

// A test binary that times out, with an etcd member it started stopped
// (SIGSTOP), leaves no member behind: the watchdog kills it before the
// timeout ends the binary.
func TestChildren_NoMemberOutlivesATestBinaryThatTimesOut(t *testing.T) {
	fulltest.Fault(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildren_HelperHangsWithAStoppedMember$", "-test.timeout=10s")
	cmd.Env = append(os.Environ(), hangEnv+"=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = io.Discard
	require.NoError(t, startChild(t, cmd))
	var pid int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "member %d", &pid); err == nil {
			break
		}
	}
	require.NotZero(t, pid, "the helper started a member")
	require.True(t, running(pid), "the member runs while the helper waits")
	go func() { _, _ = io.Copy(io.Discard, out) }()
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the helper binary ended by its timeout")
	assert.Eventually(t, func() bool { return !running(pid) }, 10*time.Second, 20*time.Millisecond,
		"the member %d is gone once the binary that started it is", pid)
}

// running reports whether process pid exists and is not a zombie.
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	return !strings.HasPrefix(s[strings.LastIndexByte(s, ')')+1:], " Z")
}
