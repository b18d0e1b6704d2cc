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
	h := replayHandle("r")
	l := &lease{id: 1}
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.NotNil(t, h.newRequestLocked(l, 1), "registered on a lease not lost")
	l.cause = fmt.Errorf("lease 1 not renewed: %w", ErrLost) // declared lost; the handle is told next, under its lock
	assert.Nil(t, h.newRequestLocked(l, 1))
	assert.Len(t, h.mine, 1, "nothing more registered")
}
