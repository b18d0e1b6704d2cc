// Package list is the module's one intrusive doubly linked list: its links live
// in the nodes, so that joining and leaving a list allocate nothing, and a node
// leaves from anywhere in O(1), without a search. A FIFO queue of callers (a
// semaphore's wait list, admission's queues, the x/sync drop-in's exact path, a
// keyed set's fair queue, an etcd semaphore's local queues) is one of these, so
// the unlink is written, and tested, once.
//
// A node type has a Link field per list it can be in, and a List holds nodes
// of that type through that field:
//
//	type waiter struct {
//		link list.Link[waiter] // its place in the queue; guarded by the queue's lock
//		n    int64
//	}
//
//	var queue list.List[waiter] // the zero List is empty
//	queue.PushBack(&w.link, w)
//	for w := queue.Front(); w != nil; w = w.link.Next() { ... }
//	queue.Remove(&w.link)
//
// A Link knows its node (PushBack records it), so the list code reads no field
// of the node type and calls no method of it: the generic code compiles to the
// loads and stores of a hand-written list, which a method reached through a
// type parameter would not. It costs the node one pointer more than a
// hand-written list's two.
//
// The rules, which the List does not check:
//   - A Link is in at most one List at a time. PushBack overwrites the Link:
//     push a node that is in no list, or one whose old list is no longer used
//     (a list of nodes being woken, say).
//   - Remove and Next take a Link of this list.
//   - A List is not safe for concurrent use: guard it, and its nodes' Links,
//     with the lock of whatever owns it.
package list

// Link is a node's place in a List: a field of the node type, one per list the
// node can be in.
type Link[T any] struct {
	next, prev *Link[T]
	node       *T // the node this Link is a field of, set by PushBack
}

// Next returns the node after l's in its list, or nil if l's is the last.
func (l *Link[T]) Next() *T {
	if l.next == nil {
		return nil
	}
	return l.next.node
}

// Prev returns the node before l's in its list, or nil if l's is the first.
func (l *Link[T]) Prev() *T {
	if l.prev == nil {
		return nil
	}
	return l.prev.node
}

// List is a doubly linked list of nodes of type T, in the order they were
// pushed. Its zero value is an empty list. It is not safe for concurrent use.
type List[T any] struct {
	head, tail *Link[T]
	len        int
}

// Len returns the number of nodes in the list.
func (l *List[T]) Len() int { return l.len }

// Front returns the first node of the list, or nil if it is empty.
func (l *List[T]) Front() *T {
	if l.head == nil {
		return nil
	}
	return l.head.node
}

// Back returns the last node of the list, or nil if it is empty.
func (l *List[T]) Back() *T {
	if l.tail == nil {
		return nil
	}
	return l.tail.node
}

// PushBack adds node at the end of the list, through link, its Link for this
// list; link must be in no list (see the package documentation).
func (l *List[T]) PushBack(link *Link[T], node *T) {
	link.next, link.prev, link.node = nil, l.tail, node
	if l.tail == nil {
		l.head = link
	} else {
		l.tail.next = link
	}
	l.tail = link
	l.len++
}

// Remove takes the node of link, a Link of this list, out of the list, and
// clears link's neighbours.
func (l *List[T]) Remove(link *Link[T]) {
	if link.prev == nil {
		l.head = link.next
	} else {
		link.prev.next = link.next
	}
	if link.next == nil {
		l.tail = link.prev
	} else {
		link.next.prev = link.prev
	}
	link.next, link.prev = nil, nil
	l.len--
}
