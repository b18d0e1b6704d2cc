package admission_test

import (
	"context"
	"fmt"

	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/admission"
)

// An adaptive limiter drives the controller's count limit through its setter;
// the controller admits, and the limiter measures what it admitted.
func ExampleController_SetCountLimit_adaptive() {
	ctrl := admission.New(admission.Resources{Count: 8, Memory: 1 << 20}, admission.WithName("reads"))
	l := adaptive.New(adaptive.ResizeFunc(ctrl.SetCountLimit),
		adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 8, MinLimit: 1}), adaptive.WithWindow(1, 0, 0))
	p, err := ctrl.Acquire(context.Background(), "scan", 4096)
	if err != nil {
		return
	}
	c := l.Start(1, 0) // admitted at once
	c.Done(adaptive.Dropped)
	p.Release()
	fmt.Println("count limit:", ctrl.Stats().Limits.Count)
	// Output: count limit: 7
}
