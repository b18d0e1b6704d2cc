package admission

import "sync"

// CPU marks. A permit's NeedCPU and Await marks nest and are recorded on the
// permit whatever its state; the controller's counts (needCPU, awaiting), which
// admission compares with the CPU concurrency, include a permit's marks only
// while it is admitted and not parked (Active or WaitingForMemory). Every change
// to a permit's marks or state goes through cpuShareLocked's before and after,
// so the counts follow the state: parking or evicting a permit drops its marks
// from them, Resume and Readmit count them again, Release drops them for good.

// cpuShareLocked is what p contributes to the controller's needCPU and awaiting
// counts now: (1, 1) when it needs CPU and awaits, (1, 0) when it needs CPU, else
// (0, 0).
func (p *Permit) cpuShareLocked() (needCPU, awaiting int) {
	if p.needCPU == 0 || (p.phase != Active && p.phase != WaitingForMemory) {
		return 0, 0
	}
	if p.await > 0 {
		return 1, 1
	}
	return 1, 0
}

// recountLocked moves the controller's counts by the change in p's share since it
// was (needCPU, awaiting). The callers: setPhaseLocked and markLocked.
func (p *Permit) recountLocked(needCPU, awaiting int) {
	n, a := p.cpuShareLocked()
	p.c.needCPU += n - needCPU
	p.c.awaiting += a - awaiting
}

// markLocked applies a change to p's marks (dNeed, dAwait of +1 or -1), keeping the
// controller's counts in step.
func (p *Permit) markLocked(dNeed, dAwait int) {
	n, a := p.cpuShareLocked()
	p.needCPU += dNeed
	p.await += dAwait
	p.recountLocked(n, a)
}

// NeedCPU marks the permit as needing CPU to make progress, until the returned
// function is called (once; later calls do nothing). While the permit is active
// and marked (and not awaiting) it counts against the CPU concurrency, so admission
// of others waits for it; while parked or evicted its marks are kept but do not
// count. Marks nest. On a released permit NeedCPU counts nothing and returns a
// function that does nothing; a mark taken before Release is dropped by Release,
// and its function then does nothing either.
func (p *Permit) NeedCPU() (done func()) {
	return p.mark(1, 0)
}

// Await marks a permit that needs CPU as waiting for something else (I/O, a remote
// call), until the returned function is called (once). An awaiting permit does not
// count against the CPU concurrency, so others may be admitted meanwhile. Marks
// nest; Await counts only while the permit needs CPU. On a released permit it
// counts nothing and returns a function that does nothing.
func (p *Permit) Await() (done func()) {
	return p.mark(0, 1)
}

func (p *Permit) mark(dNeed, dAwait int) func() {
	c := p.c
	c.lock()
	defer c.unlock()
	if p.phase == Released {
		return func() {}
	}
	p.markLocked(dNeed, dAwait)
	c.maybeAdmitLocked() // an Await may let others in
	var once sync.Once
	return func() {
		once.Do(func() {
			c.lock()
			defer c.unlock()
			if p.phase == Released {
				return // Release dropped every mark
			}
			p.markLocked(-dNeed, -dAwait)
			c.maybeAdmitLocked()
		})
	}
}
