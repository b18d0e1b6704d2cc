//go:build linux

package etcdsem

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/fulltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// blockLoad runs callers on block-mode handles until stopped, and checks the
// bound as the callers see it: every caller adds its units to one counter
// when granted and takes them off before releasing, or as soon as Lost
// closes, so the counter is at least the units held by callers that have not
// been told of a loss, and must never exceed the capacity.
type blockLoad struct {
	t        *testing.T
	capacity int64
	log      *grantLog
	stop     chan struct{}
	wg       sync.WaitGroup
	inUse    atomic.Int64
	grants   atomic.Int64
	failed   atomic.Int64
	lost     atomic.Int64
}

func startBlockLoad(t *testing.T, ctx context.Context, capacity int64, log *grantLog, sems []*Semaphore, perHandle int) *blockLoad {
	l := &blockLoad{t: t, capacity: capacity, log: log, stop: make(chan struct{})}
	for i := range len(sems) * perHandle {
		l.wg.Add(1)
		go l.caller(ctx, sems[i%len(sems)], int64(1+i%3))
	}
	return l
}

func (l *blockLoad) caller(ctx context.Context, s *Semaphore, n int64) {
	defer l.wg.Done()
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		u, err := s.Acquire(actx, n)
		cancel()
		if err != nil {
			if !errors.Is(err, ErrLost) && !errors.Is(err, semaphore.ErrTimedOut) {
				assert.NoError(l.t, err)
				return
			}
			l.failed.Add(1)
			continue
		}
		l.log.add(u)
		if now := l.inUse.Add(n); now > l.capacity {
			l.t.Errorf("bound: callers hold %d units, capacity %d", now, l.capacity)
		}
		select {
		case <-u.Lost():
			l.lost.Add(1)
		case <-time.After(2 * time.Millisecond): // the critical section
		}
		l.inUse.Add(-n)
		l.grants.Add(1)
		for {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := u.Release(rctx)
			cancel()
			if err == nil || errors.Is(err, ErrLost) || ctx.Err() != nil {
				break
			}
		}
	}
}

// progress waits until the load has made n more grants.
func (l *blockLoad) progress(what string, sems []*Semaphore, n int64) {
	l.t.Helper()
	from := l.grants.Load()
	if !assert.Eventually(l.t, func() bool { return l.grants.Load() >= from+n }, 60*time.Second, 10*time.Millisecond, "no progress %s", what) {
		for _, s := range sems {
			l.t.Log(s.debugState() + s.pool.debugState())
		}
		l.t.FailNow()
	}
}

func (l *blockLoad) end() {
	close(l.stop)
	l.wg.Wait()
	l.t.Logf("%d grants, %d acquires failed by faults, %d holders told of a loss", l.grants.Load(), l.failed.Load(), l.lost.Load())
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

	l := leader(t, procs)
	l.kill()
	load.progress("after killing the leader", sems, 200)
	l.start()
	waitHealthy(t, procs...)
	load.progress("after restarting the old leader", sems, 200)

	l = leader(t, procs)
	l.stop()
	load.progress("with the leader stopped", sems, 200)
	l.cont()
	load.progress("after the leader resumed", sems, 200)

	var follower *etcdProc
	for _, p := range procs {
		if p != leader(t, procs) {
			follower = p
		}
	}
	follower.kill()
	load.progress("after killing a follower", sems, 200)
	follower.start()
	waitHealthy(t, procs...)
	load.progress("after restarting the follower", sems, 200)
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

// debugState describes the pool, for failing tests.
func (p *blockPool) debugState() string {
	waiters, awaited, largest := p.waiting.read()
	p.ledger.mu.Lock()
	defer p.ledger.mu.Unlock()
	u, ep := p.usageLocked(), p.ep.Load()
	out := fmt.Sprintf("  pool: %+v free %d, capacity %d reserve %d grants %v, %d retired; waiting %d units in %d (largest %d), requested %d, contended %v\n",
		u, u.free(), ep.local.Capacity(), ep.reserve, ep.grants(), len(p.ledger.retired), awaited, waiters, largest, p.ledger.requested, p.contended.Load())
	for _, b := range p.ledger.blocks {
		out += fmt.Sprintf("  block %d kept %d remote %d\n", b.token, b.kept, b.remote)
	}
	return out
}

// blockCount returns the number of p's blocks.
func blockCount(p *blockPool) int {
	p.ledger.mu.Lock()
	defer p.ledger.mu.Unlock()
	return len(p.ledger.blocks)
}
