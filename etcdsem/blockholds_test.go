package etcdsem

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Units released before a block of their handle is lost were given back:
// Release stays idempotent (nil again) and Err stays nil, as in plain mode;
// only the holders at the moment of the loss are told.
func TestLocalHold_ReleasedBeforeALossStaysReleased(t *testing.T) {
	p := testPool(8)
	defer p.h.sess.stop()
	ctx := context.Background()
	p.addBlock(testBlock(p, 1, 2))
	ep := p.ep.Load()
	require.True(t, ep.local.TryAcquire(1))
	released := p.grant(ep, 1)
	require.True(t, ep.local.TryAcquire(1))
	holder := p.grant(ep, 1)
	require.NoError(t, released.Release(ctx))

	p.lose(p.ledger.blocks[0], errors.Join(errors.New("block lost"), ErrLost))
	assert.NoError(t, released.Release(ctx), "given back before the loss")
	assert.NoError(t, released.Err())
	assert.Zero(t, released.Count())
	assert.ErrorIs(t, holder.Release(ctx), ErrLost, "held at the loss")
	assert.ErrorIs(t, holder.Err(), ErrLost)
	assert.Zero(t, holder.Count())
}
