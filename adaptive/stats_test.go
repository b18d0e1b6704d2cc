package adaptive_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
)

func TestStats_StringReadsInTheModulesWords(t *testing.T) {
	l := adaptive.New(semaphore.New(4, semaphore.WithName("db")), &script{limit: 4})
	c, err := l.AcquireN(adaptive.ContextWithPriority(context.Background(), adaptive.Critical), 2)
	require.NoError(t, err)
	assert.Equal(t, `adaptive limiter "db": limit 4, capacity estimate unknown, 2 units in flight, 2 available, 0 calls waiting; `+
		`calls: 1 acquired, 0 succeeded, 0 dropped, 0 ignored, 0 shed (0 at once); windows: 0, 0 raised the limit, 0 lowered it; `+
		`critical: 2 units in flight, 0 waiting, 1 acquired, 0 shed (0 at once); `+
		`default: 0 units in flight, 0 waiting, 0 acquired, 0 shed (0 at once); `+
		`sheddable: 0 units in flight, 0 waiting, 0 acquired, 0 shed (0 at once)`, fmt.Sprintf("%v", l.Stats()))
	c.Release()
	assert.Contains(t, adaptive.Stats{Estimate: 7}.String(), `adaptive limiter unnamed: limit 0, capacity estimate 7,`)
}
