package admission_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/internal/hostile"
)

// Names, operations and Break's cause are values a user controls: the dumps
// and the errors quote them, so that each stays one value on its line.
func TestDiagnostics_QuoteEveryValueAUserGives(t *testing.T) {
	plain := func(v string) (controller, group int) {
		g := admission.NewGroup(admission.Resources{Count: 1, Memory: 100}, admission.WithName(v))
		c := g.Add(v, 1)
		p, err := c.Acquire(context.Background(), v, 10)
		require.NoError(t, err)
		defer p.Release()
		return strings.Count(c.Diagnostics(0), "\n"), strings.Count(g.Diagnostics(0), "\n")
	}
	wantC, wantG := plain("plain")
	for _, h := range hostile.Texts {
		quoted := strconv.Quote(h.Value)
		g := admission.NewGroup(admission.Resources{Count: 1, Memory: 100}, admission.WithName(h.Value))
		c := g.Add(h.Value, 1)
		p, err := c.Acquire(context.Background(), h.Value, 10)
		require.NoError(t, err)
		dump := c.Diagnostics(0)
		assert.Equal(t, wantC, strings.Count(dump, "\n"), "%s: the controller's dump:\n%s", h.Name, dump)
		assert.Contains(t, dump, "Controller "+quoted, h.Name)
		assert.Contains(t, dump, quoted+"/active", "%s: the operation", h.Name)
		gd := g.Diagnostics(0)
		assert.Equal(t, wantG, strings.Count(gd, "\n"), "%s: the group's dump:\n%s", h.Name, gd)
		assert.Contains(t, gd, "Group "+quoted, h.Name)

		c.Break(errors.New(h.Value))
		_, err = c.Acquire(context.Background(), h.Value, 0)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "broken: "+quoted, h.Name)
		assert.NotContains(t, err.Error(), "\n", h.Name)
		assert.Equal(t, h.Value, c.Reading().Cause, "%s: the cause as Break was given it", h.Name)
		p.Release()
	}
}
