package amqpsem

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every valid name's queues read back as that name's, each one way: a slot
// queue parses to its name, slot and kind; the mutex queue (the name itself)
// is no slot queue of any semaphore; and no other valid name owns them.
func FuzzQueueNames(f *testing.F) {
	for _, s := range []string{"jobs", "a-1", "a-1-", "x-01-A", "é-9-b", "-", "a--1-A-", strings.Repeat("n", MaxNameLen)} {
		f.Add(s, 1)
		f.Add(s, MaxSlots)
	}
	f.Fuzz(func(t *testing.T, name string, slot int) {
		if CheckName(name) != nil || slot < 1 || slot > MaxSlots {
			return
		}
		for kind, q := range map[byte]string{'A': slotQueue(name, slot), 'B': holdQueue(name, slot)} {
			require.LessOrEqual(t, len(q), 255, "an AMQP short string")
			n, sl, k, ok := splitQueue(q)
			require.True(t, ok, "%q", q)
			assert.Equal(t, name, n)
			assert.Equal(t, slot, sl)
			assert.Equal(t, kind, k)
		}
		_, _, _, ok := splitQueue(mutexQueue(name))
		assert.False(t, ok, "the mutex queue %q reads as a slot queue", name)
	})
}

func TestSplitQueue_OneReadingPerQueue(t *testing.T) {
	for q, want := range map[string]bool{"a-1-A": true, "a-1-B": true, "a-01-A": false, "a-1-C": false, "-1-A": false, "a-x-A": false, "a--1-A": true, "a-0-A": true} {
		_, _, _, ok := splitQueue(q)
		assert.Equal(t, want, ok, q)
	}
}
