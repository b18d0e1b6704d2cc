package adaptive_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
)

func TestNew_PanicsOnNilAndInvalidOptions(t *testing.T) {
	alg := &script{limit: 1}
	assert.PanicsWithValue(t, "adaptive: New(nil Resizer)", func() { adaptive.New(nil, alg) })
	assert.PanicsWithValue(t, "adaptive: New(nil Resizer)", func() { adaptive.New((*semaphore.Semaphore)(nil), alg) })
	assert.Panics(t, func() { adaptive.WithWindow(0, 0, 0) })
	assert.Panics(t, func() { adaptive.WithWindow(1, -1, 0) })
	assert.Panics(t, func() { adaptive.WithWindow(1, 2, 1) })
	assert.Panics(t, func() { adaptive.WithClassifier(nil) })
	assert.Panics(t, func() { adaptive.WithOnChange(nil) })
	assert.Panics(t, func() { adaptive.WithStandingQueue(0, time.Second) })
	assert.Panics(t, func() { adaptive.WithStandingQueue(time.Second, 0) })
}
