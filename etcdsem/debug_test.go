package etcdsem

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fairsem/semaphore/semdebug"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSnapshot_ShowsABlockModeSemaphoresHandlesAndCallers(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	a := newSem(t, newClient(t, ep), name, WithCapacity(4), WithBlocks(2), WithClientName("worker-a"))
	b := newSem(t, newClient(t, ep), name, WithClientName("plain\nb <i>"))
	ctx := testCtx(t, 20*time.Second)
	u, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(u)
	ub, err := b.Acquire(ctx, 2)
	require.NoError(t, err)
	log.add(ub)
	_, err = a.Stats(ctx) // the mirror has caught up with both
	require.NoError(t, err)

	snap := a.Snapshot()
	assert.Equal(t, int64(4), snap.Capacity)
	assert.Equal(t, int64(4), snap.InUse, "a's block of 2 and b's key of 2")
	assert.Equal(t, uint64(1), snap.Acquired, "a's callers' grants")
	labels := map[string]int64{}
	for _, h := range snap.Holders {
		labels[h.Label] = h.Units
	}
	assert.Equal(t, map[string]int64{"worker-a": 2, "plain\nb <i>": 2}, labels, "one holder group per handle")
	details := map[string]string{}
	for _, d := range snap.Details {
		details[d.Name] = d.Value
	}
	assert.Equal(t, "2", details["handles (processes)"])
	assert.Contains(t, details[`handle "worker-a"`], "1 block of 2 units")
	assert.Contains(t, details["this handle's callers"], "1 holder holding 1 unit")
	assert.Equal(t, "etcd semaphore, blocks of 2", a.Kind())
	assert.Equal(t, "etcd semaphore", b.Kind())
	assert.NotContains(t, a.Diagnostics(0), "\nb <i>", "a hostile client name stays on its line")
	assert.Contains(t, a.Diagnostics(1), "1 more handles")

	defer semdebug.Register(a)()
	srv := httptest.NewServer(semdebug.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/?format=text")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(body), name), "the page lists the semaphore:\n%s", body)
	require.NoError(t, u.Release(ctx))
	require.NoError(t, ub.Release(ctx))
}
