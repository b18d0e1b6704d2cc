package buildflags_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fairsem/semaphore/internal/buildflags"
)

func TestArgs_AreThoseOfThisBinary(t *testing.T) {
	if raceEnabled {
		assert.Equal(t, []string{"-race"}, buildflags.Args())
	} else {
		assert.Empty(t, buildflags.Args())
	}
}
