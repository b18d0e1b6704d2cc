package admission_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/fairsem/semaphore/admission"
)

// Do admits a request, runs it holding its permit, and releases the permit on
// every path.
func ExampleController_Do() {
	ctrl := admission.New(admission.Resources{Count: 2, Memory: 1 << 20}, admission.WithName("reads"))
	err := ctrl.Do(context.Background(), "get", 64<<10, func(ctx context.Context, p *admission.Permit) error {
		done := p.NeedCPU() // others wait for admission while this one uses the CPU
		defer done()
		fmt.Println("running with", p.Consumed(), "in state", p.State())
		return nil
	})
	fmt.Println("err:", err, "in use after:", ctrl.Stats().Held)
	// Output:
	// running with count=1 memory=64K in state active/need_cpu
	// err: <nil> in use after: count=0 memory=0B
}

type cursor struct{ name string }

func (c *cursor) Close() error { fmt.Println("closed", c.name); return nil }

// An idle request parks its permit with the value it would resume with; when a
// queued request needs the resources, the parked permit is evicted (its value
// closed) and must be readmitted before it is used again.
func ExampleController_Park() {
	ctrl := admission.New(admission.Resources{Count: 1, Memory: 1 << 20}, admission.WithName("reads"))
	ctx := context.Background()

	p, _ := ctrl.Acquire(ctx, "paged-scan", 128<<10)
	parked, _ := ctrl.Park(p, &cursor{"page 1"})

	// Nothing needs the resources: resuming gives the cursor back.
	c, ok := parked.Resume()
	fmt.Println("resumed:", ok, c.(*cursor).name)

	parked, _ = ctrl.Park(p, &cursor{"page 2"})
	other, _ := ctrl.Acquire(ctx, "get", 4<<10) // needs the only count: evicts
	_, ok = parked.Resume()
	fmt.Println("resumed:", ok, "state:", p.State())
	other.Release()

	_ = p.Readmit(ctx)
	fmt.Println("readmitted:", p.State(), p.Consumed())
	p.Release()
	// Output:
	// resumed: true page 1
	// closed page 2
	// resumed: false state: evicted
	// readmitted: active count=1 memory=128K
}

// Diagnostics explains what holds requests back.
func ExampleController_Diagnostics() {
	ctrl := admission.New(admission.Resources{Count: 1, Memory: 1 << 20}, admission.WithName("reads"))
	p, _ := ctrl.Acquire(context.Background(), "scan", 512<<10)
	done := p.NeedCPU()
	dump := ctrl.Diagnostics(10)
	fmt.Println(strings.Join(strings.Split(dump, "\n")[:5], "\n"))
	done()
	p.Release()
	// Output:
	// Controller "reads" with 1/1 count and 512K/1024K memory resources, dumping permit diagnostics:
	// Identified bottleneck(s): CPU, concurrency
	// permits count   memory  op/state
	// 1       1       512K    "scan"/active/need_cpu
	// 1       1       512K    total
}

func ExampleGroup() {
	ctx := context.Background()
	g := admission.NewGroup(admission.Resources{Count: 10, Memory: 100}, admission.WithName("server"),
		admission.WithSharedPool(0.2)) // a pool of 20; 80 split 3:1
	steady := g.Add("steady", 3)
	bursty := g.Add("bursty", 1)

	burst, _ := bursty.Acquire(ctx, "burst", 30) // its share is 20: borrows 10
	get, _ := steady.Acquire(ctx, "get", 60)     // its own share, whatever bursty borrows
	st := g.Stats()
	fmt.Printf("pool %d, lent %d; steady share %d, bursty share %d borrowing %d\n",
		st.Pool, st.Borrowed, st.Members[0].Limits.Memory, st.Members[1].Limits.Memory, st.Members[1].Borrowed)

	burst.Release() // the borrowed 10 go back to the pool
	get.Release()
	fmt.Println("lent after release:", g.Stats().Borrowed)
	// Output:
	// pool 20, lent 10; steady share 60, bursty share 20 borrowing 10
	// lent after release: 0
}
