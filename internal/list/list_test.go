package list_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/internal/fuzzprog"
	"github.com/fairsem/semaphore/internal/list"
)

// node is a node of two lists at once, through two Links.
type node struct {
	id         int
	link, also list.Link[node]
}

// ids walks l from the front and from the back, and checks that both walks
// agree with each other and with Len.
func ids(t *testing.T, l *list.List[node], link func(*node) *list.Link[node]) []int {
	t.Helper()
	var fwd, back []int
	for n := l.Front(); n != nil; n = link(n).Next() {
		fwd = append(fwd, n.id)
	}
	for n := l.Back(); n != nil; n = link(n).Prev() {
		back = append(back, n.id)
	}
	slices.Reverse(back)
	require.Equal(t, fwd, back, "the walk from the back is the walk from the front reversed")
	require.Len(t, fwd, l.Len())
	return fwd
}

func linkOf(n *node) *list.Link[node] { return &n.link }
func alsoOf(n *node) *list.Link[node] { return &n.also }

func TestList_TheZeroListIsEmpty(t *testing.T) {
	var l list.List[node]
	assert.Nil(t, l.Front())
	assert.Nil(t, l.Back())
	assert.Zero(t, l.Len())
}

func TestList_KeepsThePushOrderAndRemovesFromAnywhere(t *testing.T) {
	var l list.List[node]
	ns := []*node{{id: 1}, {id: 2}, {id: 3}, {id: 4}}
	for _, n := range ns {
		l.PushBack(&n.link, n)
	}
	assert.Equal(t, []int{1, 2, 3, 4}, ids(t, &l, linkOf))
	l.Remove(&ns[1].link) // the middle
	assert.Equal(t, []int{1, 3, 4}, ids(t, &l, linkOf))
	l.Remove(&ns[0].link) // the front
	assert.Equal(t, []int{3, 4}, ids(t, &l, linkOf))
	l.Remove(&ns[3].link) // the back
	assert.Equal(t, []int{3}, ids(t, &l, linkOf))
	assert.Nil(t, ns[3].link.Next(), "a removed node's links are cleared")
	assert.Nil(t, ns[3].link.Prev())
	l.Remove(&ns[2].link) // the last one
	assert.Empty(t, ids(t, &l, linkOf))
	assert.Nil(t, l.Front())
	assert.Nil(t, l.Back())
}

// A node removed from one list, whose links still point into it, can be pushed
// on another: PushBack overwrites them. This is how a semaphore moves settled
// waiters to the list of those to wake.
func TestList_PushBackOverwritesTheLinksOfANodeWhoseListIsGone(t *testing.T) {
	var a, b list.List[node]
	n1, n2 := &node{id: 1}, &node{id: 2}
	a.PushBack(&n1.link, n1)
	a.PushBack(&n2.link, n2)
	b.PushBack(&n2.link, n2) // a is dropped: n2's old links are not read
	assert.Equal(t, []int{2}, ids(t, &b, linkOf))
	assert.Nil(t, n2.link.Prev(), "n2's link to n1 is gone")
}

// A node with two Links is in two lists at once, independently.
func TestList_ANodeWithTwoLinksIsInTwoLists(t *testing.T) {
	var a, b list.List[node]
	ns := []*node{{id: 1}, {id: 2}, {id: 3}}
	for _, n := range ns {
		a.PushBack(&n.link, n)
	}
	for _, n := range slices.Backward(ns) {
		b.PushBack(&n.also, n)
	}
	a.Remove(&ns[1].link)
	assert.Equal(t, []int{1, 3}, ids(t, &a, linkOf))
	assert.Equal(t, []int{3, 2, 1}, ids(t, &b, alsoOf))
}

// FuzzListModel runs a program of pushes and removals, of nodes in the list and
// out of it, against a slice: after every step the list holds the slice's
// nodes, in its order, from both ends.
func FuzzListModel(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0x81, 0x80, 4, 0x82, 0x83, 0x84})
	f.Add([]byte{0, 0x80, 0, 0x80, 1, 2, 0x82, 0x81})
	f.Fuzz(func(t *testing.T, prog []byte) {
		const nodes = 16
		ns := make([]*node, nodes)
		for i := range ns {
			ns[i] = &node{id: i}
		}
		var l list.List[node]
		var model []int
		r := fuzzprog.New(prog)
		for r.More() {
			op := r.Byte()
			id := int(op & (nodes - 1))
			at := slices.Index(model, id)
			switch {
			case op&0x80 == 0 && at < 0:
				l.PushBack(&ns[id].link, ns[id])
				model = append(model, id)
			case op&0x80 != 0 && at >= 0:
				l.Remove(&ns[id].link)
				model = slices.Delete(model, at, at+1)
			}
			got := ids(t, &l, linkOf)
			if len(model) == 0 {
				require.Empty(t, got)
			} else {
				require.Equal(t, model, got)
			}
		}
	})
}
