package semaphore

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLeakDetection_RecordsLeaveTheListWhenFinalized(t *testing.T) {
	s := New(1, WithLeakDetection(func(LeakReport) {}))
	for range 1000 {
		u, _ := s.AcquireUnits(context.Background(), 1)
		u.Release()
	}
	require.Eventually(t, func() bool {
		runtime.GC()
		return holderCount(s) == 0
	}, 10e9, 1e6)
}
