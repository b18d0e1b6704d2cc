package keyed

// The package's one list: intrusive and doubly linked, oldest first, so that
// a member joins at the tail and leaves from anywhere in O(1) without an
// allocation. A waiter at the limit is in its key's line (flow.line), and a
// key with waiters is in the limit's list of keys contending for it
// (fairLimit.contending). Each member carries its own link; whoever guards the
// list guards the links.

// link is the two pointers that put a T in a list.
type link[T any] struct{ prev, next *T }

// linked is a pointer to a T that has a link.
type linked[T any] interface {
	*T
	links() *link[T]
}

// list is a list of T, oldest first.
type list[T any, P linked[T]] struct{ head, tail P }

func (l *list[T, P]) empty() bool { return l.head == nil }

// pushBack appends x, which must not be in a list.
func (l *list[T, P]) pushBack(x P) {
	lk := x.links()
	lk.prev, lk.next = (*T)(l.tail), nil
	if l.tail == nil {
		l.head = x
	} else {
		P(l.tail).links().next = (*T)(x)
	}
	l.tail = x
}

// remove takes x, which must be in l, out of it.
func (l *list[T, P]) remove(x P) {
	lk := x.links()
	if lk.prev == nil {
		l.head = P(lk.next)
	} else {
		P(lk.prev).links().next = lk.next
	}
	if lk.next == nil {
		l.tail = P(lk.prev)
	} else {
		P(lk.next).links().prev = lk.prev
	}
	lk.prev, lk.next = nil, nil
}

// each calls f for every member, oldest first; f may remove the member it is
// given.
func (l *list[T, P]) each(f func(P)) {
	for x := l.head; x != nil; {
		next := P(x.links().next)
		f(x)
		x = next
	}
}
