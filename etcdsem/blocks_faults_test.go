//go:build linux

package etcdsem

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/fairsem/semaphore/internal/fulltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// blockLoad is a faultLoad on block-mode handles, on one bound: the
// semaphore's capacity.
type blockLoad struct {
	*faultLoad
	sems []*Semaphore
}

func startBlockLoad(t *testing.T, ctx context.Context, capacity int64, log *grantLog, sems []*Semaphore, perHandle int) *blockLoad {
	l := &blockLoad{faultLoad: newFaultLoad(t, log, 2*time.Millisecond), sems: sems}
	b := &loadBound{what: "the semaphore", capacity: capacity}
	for i := range len(sems) * perHandle {
		s, n := sems[i%len(sems)], int64(1+i%3)
		l.start(ctx, func(ctx context.Context, _ int) (*Units, int64, *loadBound, error) {
			u, err := s.Acquire(ctx, n)
			return u, n, b, err
		})
	}
	return l
}

// progress waits until the load has made n more grants on sems.
func (l *blockLoad) progress(what string, sems []*Semaphore, n int64) {
	l.t.Helper()
	l.faultLoad.progress(what, n, func() string {
		var out string
		for _, s := range sems {
			out += s.debugState() + s.pool.debugState()
		}
		return out
	})
}

func TestBlocks_LeaderKillStopAndMemberKillKeepTheBoundUnderLoad(t *testing.T) {
	fulltest.Fault(t)
	procs := newCluster(t, 3)
	for _, p := range procs {
		p.start()
	}
	waitHealthy(t, procs...)
	eps := []string{procs[0].client, procs[1].client, procs[2].client}
	name := "blocks"
	const capacity = 6
	log := &grantLog{}
	sems := make([]*Semaphore, 3)
	for i := range sems {
		sems[i] = newSem(t, processClient(t, eps...), name, WithCapacity(capacity), WithBlocks(2), WithClientName(fmt.Sprintf("h%d", i)))
	}
	ctx := testCtx(t, 4*time.Minute)
	load := startBlockLoad(t, ctx, capacity, log, sems, 4)
	load.progress("at the start", sems, 200)

	clusterFaults(t, procs, true, func(what string) { load.progress(what, sems, 200) })
	load.end()
	checkHistory(t, sems[0].sess.cli, name, log)
}

func TestBlocks_SingleMemberSIGSTOPAndSIGKILLKeepTheBoundUnderLoad(t *testing.T) {
	fulltest.Fault(t)
	p := newCluster(t, 1)[0]
	p.start()
	waitHealthy(t, p)
	name := "blocks"
	const capacity = 4
	log := &grantLog{}
	ttl := WithTTL(2 * time.Second)
	sems := []*Semaphore{
		newSem(t, processClient(t, p.client), name, WithCapacity(capacity), WithBlocks(2), ttl),
		newSem(t, processClient(t, p.client), name, WithBlocks(1), ttl),
	}
	ctx := testCtx(t, 3*time.Minute)
	load := startBlockLoad(t, ctx, capacity, log, sems, 3)
	load.progress("at the start", sems, 100)

	p.stop()
	for _, s := range sems {
		// Past the TTL every handle's blocks are lost, and it knows.
		waitFor(t, "the blocks are lost while etcd is stopped", func() bool {
			return s.pool.ep.Load().local.Available() == 0 && blockCount(s.pool) == 0
		})
	}
	p.cont()
	load.progress("after etcd resumed", sems, 100)

	p.kill()
	p.start()
	waitHealthy(t, p)
	load.progress("after etcd restarted", sems, 100)
	load.end()
	checkHistory(t, sems[0].sess.cli, name, log)
}

// The partition through the proxy, under load: a handle cut off from etcd
// tells its holders of the loss before the other handle can take the units.
func TestBlocks_PartitionUnderLoadKeepsTheBound(t *testing.T) {
	fulltest.Fault(t)
	ep := sharedEndpoint(t)
	name := testName(t)
	const capacity = 4
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	px := newProxy(t, ep)
	margin := WithSafetyMargin(500 * time.Millisecond)
	cut := newSem(t, newClient(t, px.endpoint()), name, WithCapacity(capacity), WithBlocks(2), WithTTL(2*time.Second), margin)
	t.Cleanup(px.release)
	other := newSem(t, newClient(t, ep), name, WithBlocks(2), WithTTL(2*time.Second), margin)
	sems := []*Semaphore{cut, other}
	ctx := testCtx(t, 2*time.Minute)
	load := startBlockLoad(t, ctx, capacity, log, sems, 3)
	load.progress("at the start", sems, 100)

	cutEpoch := cut.pool.ep.Load()
	px.hold(true, true)
	// Its blocks are lost (or it had given every one back).
	waitFor(t, "the cut-off handle's blocks are lost", func() bool {
		return cut.pool.ep.Load() != cutEpoch || blockCount(cut.pool) == 0
	})
	load.progress("with one handle cut off", []*Semaphore{other}, 100)
	px.release()
	px.dropConns()
	load.progress("after the partition healed", sems, 100)
	load.end()
}

// blocksClientEnv makes the test binary a block-mode client that takes every
// unit of a semaphore and then waits to be killed.
const blocksClientEnv = "ETCDSEM_TEST_BLOCKS_CLIENT"

func init() {
	if spec := os.Getenv(blocksClientEnv); spec != "" {
		watchParent()
		os.Exit(blocksClient(spec))
	}
}

// blocksClient runs the client of spec "ENDPOINT NAME CAPACITY": it prints
// "held" once its callers hold every unit, then waits forever.
func blocksClient(spec string) int {
	var ep, name string
	var capacity int64
	if _, err := fmt.Sscan(spec, &ep, &name, &capacity); err != nil {
		fmt.Println(err)
		return 1
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	ctx := context.Background()
	s, err := New(ctx, cli, name, WithBlocks(2), WithTTL(2*time.Second))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	for range capacity {
		if _, err := s.Acquire(ctx, 1); err != nil {
			fmt.Println(err)
			return 1
		}
	}
	fmt.Println("held")
	select {}
}

func TestBlocks_ClientProcessSIGKILLGivesTheUnitsBackAfterTheTTL(t *testing.T) {
	fulltest.Fault(t)
	ep := sharedEndpoint(t)
	name := testName(t)
	const capacity = 4
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	s := newSem(t, newClient(t, ep), name, WithCapacity(capacity), WithBlocks(2))

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), blocksClientEnv+"="+ep+" "+name+" "+strconv.Itoa(capacity))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, startChild(t, cmd))
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "held\n", line, "the client process holds every unit")

	ctx := testCtx(t, 30*time.Second)
	got := make(chan *Units, 1)
	go func() {
		u, err := s.Acquire(ctx, capacity)
		assert.NoError(t, err)
		got <- u
	}()
	waitWaiters(t, s, 1)
	killGroup(cmd.Process.Pid)
	killed := time.Now()
	_ = cmd.Wait()
	u := <-got
	log.add(u)
	t.Logf("served %v after the client process was killed", time.Since(killed).Round(time.Millisecond))
	assert.Equal(t, int64(capacity), u.Count())
	require.NoError(t, u.Release(ctx))
}

// blockCount returns the number of p's blocks.
func blockCount(p *blockPool) int {
	p.ledger.mu.Lock()
	defer p.ledger.mu.Unlock()
	return len(p.ledger.blocks)
}
