// Package amqpsem is the persistent semaphore of RabbitMQ's amqp-locks
// protocol, with the contract of github.com/fairsem/semaphore where RabbitMQ
// allows it: processes on any machines share a semaphore of N slots kept in
// the broker, holders are told when they lose their slots before anyone else
// can take them, and every call ends.
//
//	s, err := amqpsem.New(ctx, "amqp://guest:guest@127.0.0.1:5672/", "migrations", amqpsem.WithSlots(3))
//	...
//	u, err := s.Acquire(ctx, 1)
//	if err != nil {
//		return err // names the semaphore, the request and the reason
//	}
//	defer u.Release(context.WithoutCancel(ctx))
//	select {
//	case <-u.Lost(): // the slot may be someone else's now: stop
//	...
//	}
//
// # The protocol
//
// A semaphore named NAME with C slots is the durable queues NAME-1-A ...
// NAME-C-A (the slots); the exclusive queue NAME-X-B holds slot X (it lives as
// long as the connection that declared it, so a crashed holder frees its
// slot); the exclusive queue NAME is the administration mutex. A client
// acquires by walking slot 1, 2, ...: it probes A[L] (missing: no free slot,
// fail), then B[L] (present: next slot), then declares B[L]; a declare that
// loses a race gets RESOURCE_LOCKED, which closes its channel. It releases by
// deleting B[L], or by closing its channel or connection. It verifies a held
// slot by probing A[L] on the connection that holds it. Administrators add
// slots above the maximum and remove them from the top, holding the mutex,
// each deletion confirmed before the next, and may overshoot. This package
// speaks exactly that, with the queue names above, so other implementations
// share a semaphore with it: TryAcquire is the protocol's acquire, Units
// delete their B queues, Units.Verify is the protocol's verification, and
// AddSlots, RemoveSlots, Resize, Destroy and WaitReleased are its
// administration. The walk probes queues as the protocol recommends, by
// publishing to them (mandatory, confirmed, expiring at once), which never
// breaks a channel; a held slot's A queue is checked with a passive declare on
// the holding connection, which breaks a channel only when the slot is gone.
//
// # Departures from the protocol, and why
//
//   - Probes go in batches: the A and B queues of many slots in one round
//     trip. Declares still go in ascending order, each after the probes that
//     showed its slot free, so other clients see the same walk.
//   - The last declare of a walk and the verification of every slot it took
//     go out together on one channel, without waiting for each answer: the
//     broker handles a channel's requests in order, so the answer to the last
//     check means the declare was made and every A queue still existed after
//     it. An uncontended acquire of one slot is two round trips: the probes,
//     then the declare with its verification. A release of n slots is one.
//   - After RESOURCE_LOCKED the walk reopens its channel, pauses for a random
//     skew (WithAttempts) and goes on with the next free slot, as the
//     protocol permits, instead of from slot 1; after the last attempt it
//     gives back what it took and fails with ErrContended.
//   - Weighted calls: Acquire(ctx, n) and TryAcquire(ctx, n) hold n slots
//     (n B queues), all or none: a walk that cannot find n free slots gives
//     back those it declared. The protocol has single slots only.
//   - A handle never declares a B queue its own connection holds: the broker
//     would answer declare-ok and grant the slot twice within one process.
//   - Adding X slots declares every A queue from C+1 to C+X, ascending (the
//     text says "declaring the A queue for C + X"; declaring that one alone
//     would leave a gap, which hides every slot above it).
//   - Names are checked (CheckName): names that are no valid queue names,
//     and names ending in -DIGITS-A or -DIGITS-B, whose mutex queue would be
//     another semaphore's slot queue, are refused.
//   - Two connections per handle: one holds the B queues and checks the
//     slots held, one probes. A broker in a resource alarm blocks a
//     connection that publishes (probes publish) and then reads nothing from
//     it; the holding connection never publishes, so during an alarm holders
//     still verify, release and prove they are alive.
//   - Nothing else is stored in the broker. Break and Drain, which the
//     protocol has no state for, act on the handle only (below).
//
// # Waiting, and the order waiters are served in
//
// The protocol has no queue of waiters. Acquire waits for a change and walks
// the slots again: with the broker's event exchange (the
// rabbitmq_event_exchange plugin, WakeEvents), it consumes queue.deleted and
// queue.created events and walks again when one names this semaphore's A or
// B queues (a holder left, a slot was added); without it (WakePolling) it
// walks again after a backoff from 20ms doubling to 1s; a release of the same
// handle wakes it at once. Callers of one handle are served in FIFO order
// (the core semaphore orders them: the first walks, the others queue behind
// it, a large request holding back smaller ones). Across handles there is no
// order: when a slot comes free, each handle's first waiter walks, and the
// first declare to reach the broker wins; a caller of one process can be
// served before an earlier caller of another, and a large request can be
// passed by smaller ones of other processes for as long as they keep the
// slots busy. cmd/amqpsembench measures how often that happens.
//
// # Why Lost closes before anyone else can take the slot
//
// Another client can declare a holder's B queue only once the broker has
// deleted it, and the broker deletes a B queue its holder does not delete
// only when it closes the holder's connection. Without a close from the
// client (a crash closes the socket; the broker sees that at once), the
// broker closes a connection when it has received nothing on it for the
// heartbeat timeout T: it checks every T and closes after two checks find
// nothing new, so never sooner than T after the last byte it received. A
// handle sends the broker a request it must answer every T/3 (basic.qos on a
// channel of its own), noting the time before sending; an answer proves the
// broker received the request after that time. Lost closes at the send time
// of the last answered request plus T, less the safety margin: before the
// broker can close the connection, so before anyone else can take the slots.
// When the broker does close the connection (it restarts, an operator closes
// it), the client learns it as the connection closes, and Lost closes then.
// The partition test measures the lead. The holder's Units then fail
// cleanly: Release and Verify return ErrLost, Count is 0.
//
// # Differences from the in-process semaphore
//
//   - Methods take a context and may fail with the broker's errors.
//     TryAcquire does I/O, and returns an error (ErrTooLarge, ErrBroken,
//     ErrContended) where the in-process one returns false.
//   - Units can be lost (Lost, ErrLost).
//   - Break breaks this handle only: its waiting callers and later acquires
//     fail with ErrBroken; holders keep their slots; Drain waits for this
//     handle's holders. Other processes, and other implementations, know
//     nothing of it. To stop every client, remove the slots (RemoveSlots,
//     Destroy), which the protocol defines, then WaitReleased.
//   - Shrinking is RemoveSlots: holders of removed slots keep them (as a
//     shrinking Resize keeps holders in-process) until they give them back;
//     Verify tells them (ErrSlotRemoved), WaitReleased waits for it.
//   - No fencing token: the protocol has none. No Consume, Split or
//     WithMaxWaiters. Return gives back the highest slots of a holding.
//   - Errors read `amqpsem "NAME": WHAT: WHY` and wrap the core's sentinels
//     for the meanings they share (ErrBroken, ErrTimedOut, ErrTooLarge,
//     ErrInsufficientUnits); an acquire's error carries its outcome for
//     semaphore.OutcomeOf (TimedOut, Cancelled, Broken, TooLarge).
//
// # Every call ends
//
// Each call ends by its context, by Close, or when the broker answers. No
// request waits on a silent broker longer than the holding connection lives:
// when it is declared lost, it is closed, and every request on it fails. A
// waiting Acquire whose connection drops dials again after a backoff (the
// broker may be restarting); B queues declared on the dropped connection are
// gone with it, and a walk whose caller left deletes what it declared before
// its slots are free for this handle again, so no slot is left held by
// nobody. What the broker refuses for good (ErrRefused: permissions, a queue
// declared with other properties) and bad names (ErrBadName) end the call
// with a clear error. So does a resource alarm, at once: a call that needs a
// probe fails with ErrBlocked while the broker blocks the probing connection
// (it says so: connection.blocked), Verify, Return and Release go on working
// on the holding connection, and Close does not wait for a closing handshake
// the broker would not read. A probe the broker leaves unconfirmed for a
// heartbeat timeout on a connection it does not say it blocks ends too, with
// that connection, and a waiting Acquire dials a new one.
package amqpsem
