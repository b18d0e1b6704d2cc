package admission_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fairsem/semaphore/admission"
)

func TestController_ZeroValuePanicsSayingToUseNew(t *testing.T) {
	const msg = "admission: zero Controller: create it with admission.New or Group.Add"
	var c admission.Controller
	for name, f := range map[string]func(){
		"Acquire":           func() { _, _ = c.Acquire(context.Background(), "op", 1) },
		"Do":                func() { _ = c.Do(context.Background(), "op", 1, nil) },
		"Track":             func() { c.Track("op") },
		"Park":              func() { _, _ = c.Park(&admission.Permit{}, nil) },
		"EvictOne":          func() { c.EvictOne() },
		"EvictWhere":        func() { c.EvictWhere(func(string) bool { return true }) },
		"Break":             func() { c.Break(nil) },
		"Drain":             func() { _ = c.Drain(context.Background()) },
		"Stats":             func() { c.Stats() },
		"Diagnostics":       func() { c.Diagnostics(0) },
		"SetLimits":         func() { c.SetLimits(limits(1, 1)) },
		"SetCPUConcurrency": func() { c.SetCPUConcurrency(1) },
		"SetMaxWaiters":     func() { c.SetMaxWaiters(1) },
	} {
		assert.PanicsWithValue(t, msg, f, name)
	}
}

func TestGroup_ZeroValuePanicsSayingToUseNewGroup(t *testing.T) {
	const msg = "admission: zero Group: create it with admission.NewGroup"
	var g admission.Group
	member := admission.NewGroup(limits(1, 1)).Add("m", 1)
	for name, f := range map[string]func(){
		"Add":         func() { g.Add("m", 1) },
		"SetShares":   func() { g.SetShares(member, 1) },
		"SetTotal":    func() { g.SetTotal(limits(1, 1)) },
		"Remove":      func() { g.Remove(member) },
		"Stats":       func() { g.Stats() },
		"Diagnostics": func() { g.Diagnostics(0) },
	} {
		assert.PanicsWithValue(t, msg, f, name)
	}
}
