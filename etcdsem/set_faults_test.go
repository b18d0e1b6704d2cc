//go:build linux

package etcdsem

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fairsem/semaphore/internal/fulltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// setLoad is a faultLoad on Sets, each caller taking keys in turn, each key
// its own bound.
type setLoad struct {
	*faultLoad
}

func startSetLoad(t *testing.T, ctx context.Context, capOf func(string) int64, keys int, log *grantLog, sets []*Set, perSet int) *setLoad {
	l := &setLoad{faultLoad: newFaultLoad(t, log, time.Millisecond)}
	bounds := make([]*loadBound, keys)
	for i := range bounds {
		k := "tenant-" + strconv.Itoa(i)
		bounds[i] = &loadBound{what: strconv.Quote(k), capacity: capOf(k)}
	}
	for i := range len(sets) * perSet {
		s := sets[i%len(sets)]
		l.start(ctx, func(ctx context.Context, r int) (*Units, int64, *loadBound, error) {
			b := bounds[(i*7+r*13)%keys]
			key := "tenant-" + strconv.Itoa((i*7+r*13)%keys)
			n := 1 + int64(i+r)%b.capacity
			u, err := s.Acquire(ctx, key, n)
			return u, n, b, err
		})
	}
	return l
}

// progress waits until the load has made n more grants on sets.
func (l *setLoad) progress(what string, sets []*Set, n int64) {
	l.t.Helper()
	l.faultLoad.progress(what, n, func() string {
		var out string
		for _, s := range sets {
			out += s.debugState()
		}
		return out
	})
}

func TestSet_LeaderKillStopAndMemberKillKeepEveryKeysBound(t *testing.T) {
	fulltest.Fault(t)
	procs := newCluster(t, 3)
	for _, p := range procs {
		p.start()
	}
	waitHealthy(t, procs...)
	eps := []string{procs[0].client, procs[1].client, procs[2].client}
	name := "set"
	capOf := func(k string) int64 { return 1 + int64(len(k))%3 }
	log := &grantLog{}
	sets := make([]*Set, 3)
	for i := range sets {
		sets[i] = newSet(t, processClient(t, eps...), name, capOf, WithClientName(fmt.Sprintf("s%d", i)), WithTTL(3*time.Second))
	}
	ctx := testCtx(t, 4*time.Minute)
	load := startSetLoad(t, ctx, capOf, 40, log, sets, 4)
	load.progress("at the start", sets, 50)

	clusterFaults(t, procs, true, func(what string) { load.progress(what, sets, 50) })
	load.end()

	n := checkSetHistory(t, processClient(t, eps...), name, capOf, log)
	assert.GreaterOrEqual(t, n, int(load.grants.Load()))
}

func TestSet_SingleMemberSIGSTOPAndSIGKILLKeepEveryKeysBound(t *testing.T) {
	fulltest.Fault(t)
	procs := newCluster(t, 1)
	procs[0].start()
	waitHealthy(t, procs...)
	ep := procs[0].client
	name := "set"
	capOf := func(string) int64 { return 2 }
	log := &grantLog{}
	margin := WithSafetyMargin(500 * time.Millisecond)
	sets := []*Set{
		newSet(t, processClient(t, ep), name, capOf, WithTTL(2*time.Second), margin),
		newSet(t, processClient(t, ep), name, capOf, WithTTL(2*time.Second), margin),
	}
	ctx := testCtx(t, 4*time.Minute)
	load := startSetLoad(t, ctx, capOf, 20, log, sets, 4)
	load.progress("at the start", sets, 50)

	procs[0].stop()
	// Past the TTL: every holder is told of its loss while the server is stopped.
	waitFor(t, "the holders are told while the server is stopped", func() bool { return load.lost.Load() > 0 || load.failed.Load() > 0 })
	procs[0].cont()
	load.progress("after the server resumed", sets, 50)

	procs[0].kill()
	procs[0].start()
	waitHealthy(t, procs...)
	load.progress("after the server was killed and restarted", sets, 50)
	load.end()
	checkSetHistory(t, processClient(t, ep), name, capOf, log)
}

func TestSet_PartitionUnderLoadKeepsEveryKeysBound(t *testing.T) {
	fulltest.Fault(t)
	ep := sharedEndpoint(t)
	name := testName(t)
	capOf := func(string) int64 { return 2 }
	log := &grantLog{}
	checkSetHistoryAtEnd(t, ep, name, capOf, log)
	px := newProxy(t, ep)
	margin := WithSafetyMargin(500 * time.Millisecond)
	cut := newSet(t, newClient(t, px.endpoint()), name, capOf, WithTTL(2*time.Second), margin)
	t.Cleanup(px.release)
	other := newSet(t, newClient(t, ep), name, capOf, WithTTL(2*time.Second), margin)
	sets := []*Set{cut, other}
	ctx := testCtx(t, 2*time.Minute)
	load := startSetLoad(t, ctx, capOf, 20, log, sets, 4)
	load.progress("at the start", sets, 100)

	px.hold(true, true)
	// Every holder behind the cut is told (or gave its units back) before
	// the others are granted those units: the bound of each key holds.
	waitFor(t, "the cut-off Set's lease is lost", func() bool { return cut.sess.current() == nil })
	load.progress("with one Set cut off", []*Set{other}, 100)
	px.release()
	px.dropConns()
	load.progress("after the partition healed", sets, 100)
	load.end()
}

// setClientEnv makes the test binary a Set client process (setClient).
const setClientEnv = "ETCDSEM_TEST_SET_CLIENT"

func init() {
	if spec := os.Getenv(setClientEnv); spec != "" {
		watchParent()
		os.Exit(setClient(spec))
	}
}

// A setClientSpec is the work of a Set client process.
type setClientSpec struct {
	Endpoint   string
	Name       string
	Capacity   int64
	Keys       []int // the keys "k<i>" it takes
	Goroutines int
	HoldAll    bool // take every unit of every key, print "held", and wait to be killed
}

// A setClientResult is what a client process reports when it ends.
type setClientResult struct {
	Grants, GaveUp int64
	KeysLeft       int // the keys its Set kept in memory once idle
	Err            string
}

// setClient runs the client of spec; see setClientSpec.
func setClient(spec string) int {
	var sp setClientSpec
	if err := json.Unmarshal([]byte(spec), &sp); err != nil {
		fmt.Println(err)
		return 1
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{sp.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	ctx := context.Background()
	s, err := NewSet(ctx, cli, sp.Name, func(string) int64 { return sp.Capacity }, WithTTL(2*time.Second))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	if sp.HoldAll {
		for _, k := range sp.Keys {
			if _, err := s.Acquire(ctx, "k"+strconv.Itoa(k), sp.Capacity); err != nil {
				fmt.Println(err)
				return 1
			}
		}
		fmt.Println("held")
		select {}
	}
	var res setClientResult
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range sp.Goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var grants, gaveUp int64
			for i := g; i < len(sp.Keys); i += sp.Goroutines {
				key := "k" + strconv.Itoa(sp.Keys[i])
				n := 1 + int64(i)%sp.Capacity
				actx, cancel := context.WithTimeout(ctx, 30*time.Second)
				u, err := s.Acquire(actx, key, n)
				cancel()
				if err != nil {
					gaveUp++
					continue
				}
				grants++
				_ = u.Release(ctx)
			}
			mu.Lock()
			res.Grants += grants
			res.GaveUp += gaveUp
			mu.Unlock()
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for s.Keys() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	res.KeysLeft = s.Keys()
	s.Close()
	cli.Close()
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	return 0
}

// startSetClient starts a client process of sp and returns it with its
// output.
func startSetClient(t *testing.T, sp setClientSpec) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	spec, err := json.Marshal(sp)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), setClientEnv+"="+string(spec))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, startChild(t, cmd))
	return cmd, bufio.NewReader(out)
}

func TestSet_ClientProcessSIGKILLGivesEveryKeyBackAfterTheTTL(t *testing.T) {
	fulltest.Fault(t)
	ep := sharedEndpoint(t)
	name := testName(t)
	const capacity, keys = 2, 50
	capOf := func(string) int64 { return capacity }
	log := &grantLog{}
	checkSetHistoryAtEnd(t, ep, name, capOf, log)
	s := newSet(t, newClient(t, ep), name, capOf)

	var all []int
	for i := range keys {
		all = append(all, i)
	}
	cmd, out := startSetClient(t, setClientSpec{Endpoint: ep, Name: name, Capacity: capacity, Keys: all, HoldAll: true})
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "held\n", line, "the client process holds every unit of every key")

	ctx := testCtx(t, 60*time.Second)
	got := make(chan *Units, keys)
	for i := range keys {
		go func() {
			u, err := s.Acquire(ctx, "k"+strconv.Itoa(i), capacity)
			assert.NoError(t, err)
			got <- u
		}()
	}
	waitFor(t, "every waiter is written", func() bool { return setKeysIn(t, s.sess.cli, name, nil) == 2*keys })
	killGroup(cmd.Process.Pid)
	killed := time.Now()
	_ = cmd.Wait()
	for range keys {
		u := <-got
		require.NotNil(t, u)
		log.add(u)
		assert.Equal(t, int64(capacity), u.Count())
		require.NoError(t, u.Release(ctx))
	}
	t.Logf("every key served %v after the client process was killed", time.Since(killed).Round(time.Millisecond))
	assert.Zero(t, setKeysIn(t, s.sess.cli, name, nil))
}

// Ten thousand keys across four client processes, each key taken by two of
// them, with weights up to the capacity: the history checker replays every
// key's history, and every process keeps no key in memory once idle.
func TestSet_TenThousandKeysAcrossFourProcesses(t *testing.T) {
	fulltest.Long(t)
	ep := sharedEndpoint(t)
	name := testName(t)
	const capacity, keys, procs = 2, 10000, 4
	capOf := func(string) int64 { return capacity }
	type child struct {
		cmd *exec.Cmd
		out *bufio.Reader
	}
	children := make([]child, procs)
	for p := range children {
		var mine []int
		for k := range keys {
			if k%procs == p || k%procs == (p+1)%procs {
				mine = append(mine, k)
			}
		}
		cmd, out := startSetClient(t, setClientSpec{Endpoint: ep, Name: name, Capacity: capacity, Keys: mine, Goroutines: 8})
		children[p] = child{cmd, out}
	}
	var grants int64
	for p, c := range children {
		line, err := c.out.ReadBytes('\n')
		require.NoError(t, err, "process %d", p)
		var res setClientResult
		require.NoError(t, json.Unmarshal(line, &res), "process %d: %s", p, line)
		require.NoError(t, c.cmd.Wait())
		assert.Zero(t, res.GaveUp, "process %d", p)
		assert.Zero(t, res.KeysLeft, "process %d keeps no key in memory once idle", p)
		grants += res.Grants
	}
	assert.Equal(t, int64(keys*2), grants)
	cli := newClient(t, ep)
	assert.Zero(t, setKeysIn(t, cli, name, nil), "no key left in etcd")
	n := checkSetHistory(t, cli, name, capOf, nil)
	assert.Equal(t, keys*2, n, "the rule granted every acquire once")
}
