package keyed_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/keyed"
)

// recorder is an Observer that keeps what it hears.
type recorder struct {
	events []string
	broken []error
}

func (r *recorder) WaitEnded(s *keyed.Set, key string, e semaphore.WaitEvent) {
	r.events = append(r.events, s.Name()+"/"+key+": "+e.Outcome.String())
}
func (r *recorder) Broken(_ *keyed.Set, cause error) { r.broken = append(r.broken, cause) }

func TestObserver_HearsKeyLevelWaitsWithTheirKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &recorder{}
		s := keyed.New(1, keyed.WithName("up"), keyed.WithObserver(obs))
		u, err := s.Acquire(context.Background(), "k", 1)
		require.NoError(t, err)
		assert.Empty(t, obs.events, "granted at once: not reported")
		_, err = s.AcquireTimeout(time.Second, "k", 1)
		require.Error(t, err)
		ch := acquireAsync(context.Background(), s, "k", 1)
		synctest.Wait()
		u.Release()
		r := <-ch
		require.NoError(t, r.err)
		r.u.Release()
		assert.Equal(t, []string{"up/k: timed_out", "up/k: granted"}, obs.events)
	})
}
