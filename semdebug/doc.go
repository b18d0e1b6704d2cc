// Package semdebug serves a live debug page of the limiters in a process, in the
// line of net/http/pprof and golang.org/x/net/trace: for every registered
// limiter, who holds what, who waits and for how long, which ones are stalled,
// and how that changed over the last minutes.
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
// The index has one row per object: its name (cut to 40 characters, whole in the
// cell's title and on the object's page), kind, capacity, units in use and
// available, waiters, the head waiter's wait, the oldest holder's age, whether it
// is broken, and the rates of calls acquired, timed out, rejected and shed per
// second since the previous reading. Rows whose head waiter has waited longer
// than the stall threshold (WithStallThreshold) are marked and sorted first; any
// column sorts with ?sort=column (and &desc=1). The HTML index shows the first
// 1000 rows (?limit=N changes that, 0 for all); JSON and text show every row.
// Each object has a page of its own, at the index's path followed by its id: the
// same numbers with every counter's total, its holders and wait list when its
// Reading lists them, its details, its Diagnostics dump, and charts of units in
// use, waiters and the head waiter's wait over the last five minutes. Both pages
// refresh themselves (WithRefresh), which a button pauses, and answer
// ?format=json and ?format=text with the same reading.
//
// # One interface
//
// The page learns an object through Limiter: its Reading, in the core's plain
// values (semaphore.Reading: capacity, units held, available, waiters,
// counters, what it does not know), and its Diagnostics dump. It knows no
// concrete type: every limiter of this module implements both methods
// (*semaphore.Semaphore, *keyed.Set, *admission.Controller, *admission.Group,
// *adaptive.Limiter, *etcdsem.Semaphore; each type's Reading says what it
// reads), and so does any type of one's own that implements them on a pointer:
//
//	func (q *jobQueue) Reading() semaphore.Reading {
//		q.mu.Lock()
//		defer q.mu.Unlock()
//		return semaphore.Reading{Kind: "job queue", Name: q.name,
//			Capacity: q.limit, Held: q.running, Available: q.limit - q.running, Waiters: len(q.queued),
//			// It counts no calls: the page shows its counters as "-".
//			Unknown: semaphore.AllFields &^ (semaphore.CapacityField | semaphore.HeldField |
//				semaphore.WaitersField | semaphore.BrokenField)}
//	}
//
// A Reading that names no kind shows the object's type. What the core's fields
// cannot say goes in Reading.Details, shown as the object gives it: an
// adaptive.Limiter's capacity estimate, an admission controller's memory.
//
// "In use" is the units the object holds, as it counts them (Reading.Held),
// never its capacity less its available units: a broken semaphore nobody holds
// has nothing in use, and one shrunk below what it holds, or in debt after
// Consume, shows more in use than its capacity. A number an object names in
// Reading.Unknown shows as "-" (null in JSON), never as 0; so do the rates of
// unknown counters, and the rates of any counter until two readings a second
// apart are known. An object without a limit in total (a keyed set limiting
// each key only) shows "no limit". The head waiter's wait is the object's
// when it knows it (a semaphore with holder tracking); otherwise the page
// derives a lower bound from successive readings of Waiters and Queued (if no
// waiter left between two readings, the head of the first is still the head),
// shown as ">=".
//
// # Rules
//
//   - Registration is weak: the page never keeps an object alive, and an object
//     that becomes unreachable leaves the page by itself. Only pointers can be
//     registered, since only they can be held weakly; registering an object
//     twice shows it once, until both registrations are undone.
//   - Names are not unique, ids are: each registered object gets an id, never
//     reused, which its page's path carries. The page names an object by its
//     name when no other registered object has it and it holds no '#', and as
//     name#id otherwise, so no two objects ever show the same key.
//   - Nothing runs for an object nobody looks at: no goroutine, no timer, no
//     hook on its paths. It is read when a page that shows it is rendered, and
//     sampled for the charts only while its page is being viewed (a view keeps
//     sampling on for a minute, which the page's refresh renews) or while Record
//     runs for it. Rates are computed between readings at least a second apart,
//     so two viewers refreshing together do not turn them into noise.
//   - A page is rendered from one reading of each object, taken outside the
//     rendering. Every value a user or a peer controls (names, Break causes,
//     holder labels, keys and client names in details) is escaped by
//     html/template in HTML, attributes included, and quoted in the text form,
//     where an object's own words (kinds, sites, details) are quoted when they
//     would break their row (a line break, a tab, an escape, bytes that are not
//     UTF-8): a hostile value can neither inject markup nor forge a row or a
//     column. JSON carries every value as given.
//   - Every response carries X-Content-Type-Options: nosniff and a
//     Content-Security-Policy that allows the page's own origin only. The pages'
//     style and script are files the handler serves next to the index, so
//     nothing is inline and nothing comes from elsewhere (the page works in an
//     air-gapped cluster); without script the page is still complete, only
//     static.
package semdebug
