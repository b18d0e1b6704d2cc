package keyed_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fairsem/semaphore/keyed"
)

func TestNew_PanicsOnNilOrInvalidOption(t *testing.T) {
	assert.PanicsWithValue(t, "keyed: New: option 1 is nil", func() { keyed.New(1, keyed.WithName("x"), nil) })
	assert.PanicsWithValue(t, "keyed: WithCapacityFunc(nil)", func() { keyed.WithCapacityFunc(nil) })
	assert.PanicsWithValue(t, "keyed: WithGlobal(nil)", func() { keyed.WithGlobal(nil) })
	assert.PanicsWithValue(t, "keyed: WithObserver(nil)", func() { keyed.WithObserver(nil) })
	assert.PanicsWithValue(t, "keyed: WithMaxWaiters(-1): negative", func() { keyed.WithMaxWaiters(-1) })
}
