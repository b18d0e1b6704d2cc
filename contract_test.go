package semaphore_test

import (
	"testing"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/contracttest"
)

func TestInterface_TheSemaphoreKeepsTheContract(t *testing.T) {
	contracttest.Run(t, func(_ *testing.T, capacity int64) semaphore.Interface {
		return semaphore.New(capacity)
	})
}
