package semaphore

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// The struct New allocates stays within 128 bytes (an 80-byte size class today):
// every field added to it is paid by every semaphore, used or not.
func TestSemaphore_StructIsAtMost128Bytes(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(Semaphore{}), uintptr(128))
}
