// Package group runs tasks on goroutines under a weighted semaphore: a task
// starts only once its units are granted, in FIFO order, so a flood of tasks
// cannot become a flood of goroutines.
//
//	g, ctx := group.WithContext(ctx, semaphore.New(8))
//	for _, f := range files {
//		if err := g.Go(ctx, size(f), func() error { return upload(ctx, f) }); err != nil {
//			break // ctx ended: a task failed, or the caller gave up
//		}
//	}
//	return g.Wait()
//
// It is errgroup with SetLimit, generalized to weights: Go blocks the caller
// until the task's n units are granted, then runs the task on a new goroutine
// that holds them until it returns. Wait waits for every task and returns the
// first error; with WithContext the first error (or panic) cancels the context.
//
// # Decisions and differences from errgroup and conc's pool
//
//   - Go takes a context and a weight, and returns an error: the caller's wait
//     for units ends when ctx ends or the semaphore is broken, and then the
//     task is not run and the error (matching ctx's error or
//     semaphore.ErrBroken) goes to the caller, not to Wait. errgroup's Go
//     cannot fail and waits without a context.
//   - Waiting tasks are granted in FIFO order, weights included: a heavy task is
//     not starved by light ones. errgroup's channel makes no order promise.
//   - The semaphore is given, not owned: several groups, or a group and other
//     code, can share one budget (memory, connections), and Break on it stops
//     every waiting Go.
//   - A panic in a task is recovered, cancels the context like an error, and
//     is re-raised by Wait, once every task has finished, as a *PanicError
//     carrying the value and the task's stack, as conc's pool does. errgroup
//     (x/sync v0.19) lets the panic crash the program on the task's goroutine.
//     A task that calls runtime.Goexit ends without error.
//   - Wait returns the first error, as errgroup does; conc's ErrorPool joins
//     every error unless told WithFirstError. Cancel-on-first-error is
//     WithContext, as in errgroup (conc: WithCancelOnError).
//   - Each task gets a new goroutine, as with errgroup; conc's pool keeps up to
//     its limit of worker goroutines and reuses them. A weighted limit has no
//     fixed number of workers to keep.
//   - Wait also waits for Go calls still waiting for their units, since each
//     may yet start a task. As with errgroup, the first Go must happen before
//     Wait, and a Group should not be reused after Wait for unrelated work.
//   - A Group must be created with New or WithContext; there is no unlimited
//     zero value.
package group
