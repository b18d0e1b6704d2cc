// Package etcdsem is the weighted, strictly FIFO semaphore of
// github.com/fairsem/semaphore shared by processes and machines through etcd:
// holders tied to a lease, told when they lose their units before anyone else
// can be granted them, with fencing tokens.
//
//	s, err := etcdsem.New(ctx, client, "migrations", etcdsem.WithCapacity(3))
//	...
//	u, err := s.Acquire(ctx, 1)
//	if err != nil {
//		return err // names the semaphore, the request and the reason
//	}
//	defer u.Release(context.WithoutCancel(ctx))
//	select {
//	case <-u.Lost(): // the units may be someone else's now: stop
//	...
//	}
//
// WithSemaphore does the same around a function, cancelling its context when
// the units are lost. Resize, Break, Repair and Drain administer the semaphore
// for every handle (the shutdown is Break, then Drain, as in-process); the
// command etcdsem/cmd/semctl does it from a shell.
//
// # Keys
//
// Any non-empty string names a semaphore. Every key of the semaphore NAME
// starts with KeyPrefix(NAME): NAME with each "%" written as "%25" and each "/"
// as "%2F", then "/" ("jobs/", "app%2Fjobs/"). No other semaphore's keys start
// with it, whatever bytes the names hold, so names that nest ("a", "a/b",
// "a/q", "a/q/x") are independent semaphores (the argument is in keys.go).
// Every key holds the escaped name, and the acquire transaction holds seven
// keys, so a name is bounded by etcd's request size limit (--max-request-bytes,
// 1.5 MiB by default) divided by seven: New refuses a name longer than
// MaxNameLen (200 KiB) escaped, with an error matching
// rpctypes.ErrRequestTooLarge.
// Under the prefix: "cap" holds the capacity (zero-padded decimal, so that
// etcd compares values as numbers), "broken" is present while broken (its
// value is the reason), and "q/<lease>-<seq>" is one key per acquire, waiting
// or holding, attached to the handle's lease, whose value is its weight (then
// the start time and the client's label, for Stats). "r/<lease>" is a
// block-mode handle's report, attached to its lease, whose value counts its
// callers (see Block mode), then the time written and the client's label.
// The grant rule reads only the range [KeyPrefix(NAME), ReportPrefix(NAME)),
// which holds "broken", "cap" and the queue and no report: every handle (and
// semctl watch) watches that range, so a report written reaches no watch. To keep the semaphores of one
// application apart from other keys, give the client a namespace
// (go.etcd.io/etcd/client/v3/namespace).
//
// Names without "/" or "%" have the keys earlier versions gave them. Earlier
// versions used a name holding "/" or "%" as the prefix as it was; their keys
// are not migrated (the module is before 1.0): delete them (etcdctl del
// --prefix NAME/) before running this version, since a stale key such as
// "a/q/cap" would sit in the queue of the semaphore "a".
//
// # The rule, and why it gives strict FIFO
//
// At every revision, walk the queue keys in create-revision order with a
// running sum of the weights of the keys that count: a waiting key dies if the
// semaphore is broken or its weight exceeds the capacity (a dead key no longer
// counts, and its owner fails with ErrBroken or ErrTooLarge and deletes it);
// otherwise it is granted if the sum up to and including it is at most the
// capacity. Every handle applies this rule to the same revisions of the same
// keys (each handle keeps a mirror through one watch and decides only at
// revision boundaries), so they agree without talking to each other and
// without a lock; the tests' history checker replays the rule independently
// over etcd's whole revision history.
//
//   - FIFO: a key's create revision is fixed and new keys always get later
//     ones, so the keys ahead of a key are only ever fewer. A key behind a
//     waiter adds the waiter's weight to its sum, so it cannot be granted
//     before the waiter: a large request at the head holds back smaller ones,
//     and is never starved.
//   - Granted stays granted: the sum ahead of a key only drops (keys ahead
//     leave; a holder's weight only drops, by Units.Return), and a grant is
//     final: a shrinking Resize makes later keys wait until the held units fit,
//     but never revokes a holder. Hence the granted keys are always a prefix
//     of the live queue, and at the revision of each grant the units granted
//     are at most the capacity.
//   - Acquire is one transaction: if not broken, the capacity is at least n
//     and the key is absent, put the key; otherwise read the key, the broken
//     flag and the capacity. The handle's watch delivers the write's own event
//     with the reply and grants the key at its creation revision if
//     everything ahead fits, so an uncontended acquire is one round trip;
//     otherwise the caller waits for the watch to grant it. (The transaction
//     does not read the queue: a range over the queue's prefix costs a walk
//     over every key name it ever had, which etcd keeps until compaction.) A
//     retry after an unknown outcome takes the other branch and finds its
//     earlier write: it keeps its place.
//   - Release deletes the key only if its create revision is still the token,
//     so a retried delete can never delete a newer key.
//   - TryAcquire writes its key only in a transaction that fails if any queue
//     key, the capacity or the broken flag changed since the view it decided
//     on, so its key is granted at creation or never written: it never jumps
//     the queue and never appears in it.
//
// # Why Lost closes before anyone else is granted the units
//
// Another key can be granted a holder's units only after the holder's key is
// deleted, and a key that is not released is deleted only when its lease
// expires on the server. The server expires a lease its TTL after the last
// renewal it received, or later (a new leader extends every lease). A handle
// notes the time just before it sends each renewal; when a renewal is
// acknowledged the lease is safe until that send time plus the TTL, an instant
// that is never after the server's expiry. Lost closes at that instant minus
// the safety margin (WithSafetyMargin), which covers a late timer and a
// difference in clock rate over one TTL. So, with clocks that advance at
// nearly the same rate (not synchronized clocks: only durations are
// compared), Lost closes before the server can delete the key, hence before
// the next grant. etcd's concurrency.Session instead counts from the arrival
// of the reply and checks once a second, and can tell a partitioned holder
// after the next waiter was already granted. The partition test measures the
// lead.
//
// Lost also closes when the key is deleted by someone else (an operator) or
// the lease is found revoked; then the others may already have the units, and
// the fencing token is the defence: Units.Token is the key's create revision,
// which increases with every grant across the cluster, so a resource that
// rejects writes carrying a token lower than the highest it has seen rejects a
// stale holder.
//
// # Block mode
//
// With WithBlocks(size), a handle takes units from etcd in blocks and grants
// them to its own callers locally: an Acquire that finds units free in the
// handle's blocks, with none of its callers waiting, costs no RPC. Plain mode
// fits few holders and strict FIFO across the fleet; block mode fits many
// grants per second per process.
//
//   - A block is an acquire like any other, made by the same handle: one key
//     in the queue, under the handle's lease, whose weight is the block's
//     units. The rule above grants it, so the blocks granted fit the capacity
//     at every revision, and the handle grants its callers at most the units
//     of its blocks (the ledger, ledger.go: units leave local use before a
//     key's weight drops, and enter it after the key is granted). Hence the
//     callers of every handle hold at most the capacity, at every moment.
//   - The callers wait for units of the blocks on a core semaphore
//     (github.com/fairsem/semaphore) that the handle feeds as blocks come and
//     takes units back from as they go: its FIFO order, its rule for a grant
//     that races a cancellation, Break and Resize are the callers', exactly.
//   - Blocks follow demand. A handle asks for one block at a time, when its
//     callers wait: enough for them, at least size units. It gives units back
//     (lowering a block's weight in place, or deleting it at 0; a holder is
//     never revoked) when they are found free at two checks a second apart,
//     and at once when another handle waits in etcd, a shrinking Resize
//     leaves the fleet over the capacity, or the semaphore is broken. Under
//     contention every handle keeps its max-min fair share of the demand it
//     sees (its callers' units held and waited for; another handle's keys),
//     giving back the excess as its callers release it; a key that heads the
//     queue for a second gets every unit the handles free, so no request
//     starves, whatever its size.
//   - Lost: every block of a handle is on its lease, whose loss is declared
//     before the server can expire it (above). When any block of a handle is
//     lost, Lost closes for every holder of the handle's blocks at that
//     moment, its waiters fail with ErrLost, and the handle starts again with
//     no blocks.
//   - Fencing: Units.Token is the create revision of the newest block the
//     handle has held, and Units.Sequence numbers the handle's grants. A block
//     is granted only while every earlier key is granted (the granted keys are
//     a prefix of the queue), so a block's key is newer than every block
//     granted before it anywhere: the units a handle grants were last held
//     under an older block of any handle, or earlier under the same token with
//     a lower sequence. So (Token, Sequence), compared in that order, orders
//     a holder after every earlier holder of its units; in plain mode
//     Sequence is 0.
//   - Order: within a handle, callers are granted in FIFO order, a large
//     request holding back smaller ones behind it, as in-process. Across
//     handles, blocks are granted in the queue's FIFO order, and a handle's
//     callers are served from the blocks it holds: a caller of one handle can
//     be served before an earlier caller of another handle that is waiting for
//     a block.
//   - Administration sees the fleet: Stats and semctl show each block as a
//     holder with its handle's client name. Each block-mode handle reports
//     its callers (holding and waiting, with their units, and its blocks'
//     units) in its report key, under its lease: at once on a new lease once
//     it holds a block or has callers waiting, then when they change, at
//     most one write per 2s per busy process, so a report is about 3s behind
//     at most while etcd answers; a failed write is tried again a second
//     later, and Close (the lease's end) deletes it. Stats.Reports, semctl status and the debug
//     page show every process's callers from the reports. Break fails the
//     handles' waiting callers and later acquires with ErrBroken at the
//     revision their watches deliver it, and the handles give units back as
//     their holders release them, so Break then Drain is still the shutdown;
//     Resize shrinks blocks as their units come free.
//   - TryAcquire takes free units of the handle's blocks when none of its
//     callers waits; with none free it asks etcd for a block without queueing
//     (max(n, size) units, then n).
//
// # Per-key limits: Set
//
// A Set is one semaphore per key under one name, for limits per tenant,
// user or job type across the fleet ("tenant X runs at most 10 jobs at
// once"), for any number of keys:
//
//	jobs, err := etcdsem.NewSet(ctx, client, "jobs", func(tenant string) int64 { return 10 })
//	...
//	u, err := jobs.Acquire(ctx, tenant, 1)
//
// Each key's semaphore is laid out and granted as a Semaphore's (the rule
// above), under KeyPrefix(name)+"k/"+escape(key)+"/", so the history checker
// and Audit's argument hold for each key. What differs:
//
//   - One session for every key: a Set holds one lease (every key it writes is
//     on it, so a lost lease tells the holders of every key, and Close gives
//     every key back at once) and one watch over all its keys, which hands
//     each key's events to that key. A process pays for the keys it uses,
//     not for the keys that exist.
//   - A key exists only while used. In etcd, its keys are its queue keys,
//     deleted as units come back: an idle key has nothing in etcd, and
//     there is no capacity key. In a process, a key is kept while a call uses
//     it or its units are held there, and dropped by the second sweep (one a
//     second) that finds it idle; a key used again is read again from etcd.
//     Reading it needs no history: a key of a Set never dies (it is never
//     broken and never above its fixed capacity), and waiting or granted, a
//     key counts the same in the rule.
//   - The capacity is configuration: capacityOf(key), which every process must
//     give alike, as it gives the name. A process whose function gives a
//     larger capacity grants its own keys up to it. Acquire and TryAcquire
//     refuse n above it before any RPC. There is no Resize, Break or block
//     mode per key.
//   - A write whose caller gave up before its reply, landing later for a key
//     no longer in memory, is found by the watch (a key of the Set's lease
//     that no request owns) and deleted.
//
// # Differences from the in-process semaphore, and why
//
//   - Methods take a context and may fail with an RPC error: etcd may be
//     unreachable. New, Release, Return, Resize, Break, Repair and Stats do
//     I/O; TryAcquire does too, though it never waits in the queue, and it
//     returns an error (ErrBroken, ErrTooLarge) where the in-process one
//     returns false, because a remote caller cannot otherwise tell why.
//   - Units can be lost (Lost, ErrLost), which in-process units cannot.
//   - Break's cause crosses processes as text: waiters' errors wrap
//     semaphore.ErrBroken and carry the reason, not the original error value.
//     The broken state is stored, so it survives restarts: Repair clears it.
//     Holders keep their units and may release them while broken, and Resize
//     works while broken.
//   - A cancellation racing a grant: as in-process, the caller sees its
//     context error and the units pass on (its key is deleted).
//   - No Consume, Split, Adopt or WithMaxWaiters. Consume would let
//     availability go negative, which the rule cannot express without a key
//     that jumps the queue. A split off part of a holding would need a new
//     key, and every new key is created behind the waiters. A bound on waiters
//     would need a count read and checked in the acquire transaction, which
//     every acquire would contend on. Return (giving back part of a holding
//     in place) is supported.
//   - Errors read `etcdsem "NAME": WHAT: WHY` (for example `etcdsem "jobs":
//     acquire 2 units: timed out after 1.5s: context deadline exceeded`),
//     naming the semaphore by its name, not its keys. A meaning shared with
//     the in-process semaphore wraps the core's sentinel (semaphore.ErrBroken,
//     ErrTimedOut, ErrTooLarge, ErrInsufficientUnits), so one errors.Is check
//     serves both, and an acquire's error carries its outcome for
//     semaphore.OutcomeOf as the core's does (TimedOut, Cancelled, Broken,
//     TooLarge; a context cancelled with any cause is Cancelled). An acquire
//     ended by ErrLost, ErrClosed or an RPC failure carries none: the
//     semaphore decided nothing. ErrQueueFull never occurs (there is no bound
//     on waiters). "queued behind N" is not reported (it would cost a read per
//     failure).
//   - A new handle replays the history of the keys it finds, from just before
//     the oldest was created, to learn which are granted. Where that history
//     was compacted, or its watch later fell behind a compaction, it cannot
//     know what it missed: it counts keys of unknown state as holders (making
//     its own acquires wait longer than needed, never shorter), Stats reports
//     them as waiters, and a compaction fails its waiters with ErrLost rather
//     than guess whether they were granted in the gap.
//
// # Every call ends
//
// No call waits on etcd without bound of its own: each ends when its context
// ends, when Close is called, or, for an acquire, when etcd answers for good.
// An RPC whose outcome is unknown (a timeout, a lost connection, no leader) is
// retried; one etcd refuses for good (a request too large, permission denied,
// the database full) ends the call with etcd's error, wrapped ("refused for
// good"). An acquire whose lease is lost once its key may have been written
// ends with ErrLost, its place gone with the lease: on the local notice of the
// loss (within the TTL when etcd cannot be reached) or when the server says it
// no longer knows the lease; before any write, it tries again on a new lease.
// No call holds the handle's lock across an RPC, so a call that waits on etcd
// (the first acquire's lease grant, a retry) delays no other call.
//
// # Decisions where the design leaves room
//
//   - One lease per handle, created on the first acquire and replaced after a
//     loss, renewed every third of the TTL and retried at once on failure.
//     Default TTL 10s, safety margin a tenth of it (at least 500ms); etcd may
//     raise the TTL to its minimum.
//   - One watch per handle (leader required, re-established from the next
//     unseen revision on any error), so a release costs every handle one event
//     and no RPC, however many of its callers wait. It watches the keys the
//     rule reads, not the reports, so reports cost no handle an event.
//   - A missing capacity is 0: every acquire of units fails with ErrTooLarge
//     until Resize or WithCapacity sets one.
//   - Close revokes the lease: every unit of the handle is given back at once,
//     and every call of the handle in flight (a waiter, or a call waiting on
//     etcd) ends with ErrClosed. Closing is final and checked at every
//     entry point: Release and Return of the handle's units return nil
//     afterwards (the units were given back, not lost: Err stays nil and Lost
//     stays open), Close returns nil again, and every other call but Name
//     fails with ErrClosed. (Close is io.Closer's: it ends this handle, not the
//     semaphore; Break is the semaphore's shutdown.)
//   - ErrLost and ErrClosed are this package's own and match none of the
//     core's sentinels: neither says anything of the semaphore's state (it is
//     not broken, and another handle may acquire at once).
//   - The name is New's argument, not a WithName option: it is the
//     semaphore's identity in etcd, shared by every handle, with no sensible
//     default. WithClientName labels a handle's keys, a different thing.
//   - Stats and TryAcquire first wait until the handle's mirror has applied
//     the cluster's current revision (for Stats, that of its read of the
//     reports). The watch sees only the semaphore's
//     keys, so when the latest revisions were other keys' writes the handle
//     asks etcd for a progress notification on its watch stream (a message on
//     the open stream, not an RPC), which moves the mirror there.
package etcdsem
