package etcdsem

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A request is never registered on a lease already lost: the loss told every
// request on the lease when it was declared, so one registered after it (its
// caller got the lease just before) would never be told, and its units,
// granted by a server that has not expired the lease yet, would be lost
// without Lost closing. The caller takes a new lease instead.
func TestNewRequest_NeverOnALeaseAlreadyLost(t *testing.T) {
	s := &Semaphore{name: "r", keyLayout: keysOf("r"), mine: map[string]*request{}}
	l := &lease{id: 1}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lease = l
	assert.NotNil(t, s.newRequestLocked(l, 1), "registered on the handle's lease")
	l.cause = fmt.Errorf("lease 1 not renewed: %w", ErrLost)
	s.lease = nil // leaseLost told the one request on l
	assert.Nil(t, s.newRequestLocked(l, 1))
	assert.Len(t, s.mine, 1, "nothing more registered")
}
