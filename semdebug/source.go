package semdebug

import "github.com/fairsem/semaphore"

// A Limiter is what Register accepts: anything that reads itself in the core's
// plain values and dumps itself for a human. Every limiter of this module is
// one: *semaphore.Semaphore, *keyed.Set, *admission.Controller and Group,
// *adaptive.Limiter, *etcdsem.Semaphore. A type of one's own plugs in by
// implementing both methods on a pointer type.
//
// The page calls the methods while it renders, from the handler's goroutine
// and its sampler's, possibly concurrently: they must be safe for concurrent
// use, quick, and must not call back into this package.
type Limiter interface {
	// Reading reads the object, ideally in one hold of its lock: the page shows
	// its numbers, its name (Reading.Name; it may be empty and shared with
	// other objects: the page tells them apart by id) and its kind
	// (Reading.Kind; the object's type when empty). A number it names in
	// Unknown shows as "-", never as 0.
	Reading() semaphore.Reading
	// Diagnostics is the object's own dump, at most maxLines rows per table
	// (maxLines <= 0: no limit).
	Diagnostics(maxLines int) string
}
