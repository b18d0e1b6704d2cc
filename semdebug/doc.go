// Package semdebug serves a live debug page of the limiters in a process, in the
// line of net/http/pprof and golang.org/x/net/trace: for every registered
// semaphore, admission controller, admission group, keyed set or other Source, who holds
// what, who waits and for how long, which ones are stalled, and how that changed
// over the last minutes.
//
// Register an object, then mount Handler where your other internals live:
//
//	db := semaphore.New(16, semaphore.WithName("db"), semaphore.WithHolderTracking())
//	defer semdebug.Register(db)()
//	mux.Handle("/debug/semaphores/", semdebug.Handler())
//
// Importing the package mounts nothing on http.DefaultServeMux. The page shows
// object names, acquire sites and holder labels: serve it only to operators.
//
// # What it shows
//
// The index has one row per object: its name, kind, capacity, units in use and
// available, waiters, the head waiter's wait, the oldest holder's age, whether it
// is broken, and rates (acquired, timed out and shed per second) since the
// previous reading. Rows whose head waiter has waited longer than the stall
// threshold (WithStallThreshold) are marked and sorted first; any column sorts
// with ?sort=column (and &desc=1). The HTML index shows the first 1000 rows
// (?limit=N changes that, 0 for all); JSON and text show every row. Each
// object has a page of its own, at the
// index's path followed by its id: the same numbers, its Diagnostics dump, its
// holders and wait list when its Source lists them, its details, and charts of
// units in use, waiters and the head waiter's wait over the last five minutes.
// Both pages refresh themselves (WithRefresh), which a button pauses, and answer
// ?format=json and ?format=text with the same reading.
//
// # Rules
//
//   - Registration is weak: the page never keeps an object alive, and an object
//     that becomes unreachable leaves the page by itself.
//   - Nothing runs for an object nobody looks at: no goroutine, no timer, no
//     hook on its paths. It is read when a page that shows it is rendered, and
//     sampled for the charts only while its page is being viewed (a view keeps
//     sampling on for a minute, which the page's refresh renews) or while Record
//     runs for it.
//   - A page is rendered from one reading of each object, taken outside the
//     rendering; every value is escaped by html/template (HTML) or quoted (text),
//     so a hostile name cannot inject markup or forge a row.
//
// # Decisions where the issue left room
//
//   - Names are not unique, ids are: each registered object gets an id, never
//     reused, which its page's path carries. The page names an object by its
//     name when no other registered object has it and it holds no '#', and as
//     name#id otherwise, so no two objects ever show the same key.
//   - A core semaphore knows its head waiter's wait and its oldest holder's age
//     only with holder tracking (Stats.HeadWait, Stats.OldestHolder). Without
//     it the page, which parses nothing out of the Diagnostics text, derives a
//     lower bound of the head's wait from successive readings of Waiters and
//     Snapshot.Joined (if no waiter left between two readings, the head of the
//     first is still the head), shown as ">=". Any Source that knows the exact
//     wait reports it in Snapshot.HeadWait.
//   - Rates are computed between readings at least a second apart, so two
//     viewers refreshing together do not turn them into noise.
//   - An admission controller shows its count resource as capacity and in use;
//     memory is among its details. A group shows the sums over its members, and
//     which of them are broken. A keyed set shows its units held over every
//     key, and its global semaphore's capacity when it has one.
//   - Registering an object twice shows it once, until both registrations are
//     undone. Only pointers can be registered, since only they can be held
//     weakly.
//   - Auto-refresh replaces the page's content in place with a few lines of
//     inline script (no external asset, so the page works in an air-gapped
//     cluster); without script the page is still complete, only static.
package semdebug
