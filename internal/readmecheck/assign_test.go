package readmecheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSelectedPackages_CountsSelectorsNotCommentsStringsOrFields(t *testing.T) {
	code := `c := prom.NewSemaphoreCollector() // or otel.NewSemaphoreMetrics(meter)
s := "etcdsem.New"
st.Members[0].group.x = semaphore.MaxUnits
var _ = p.context
`
	assert.Equal(t, []string{"prom", "semaphore"}, selectedPackages(code))
}

func TestModuleOf_NestedModulePackagesDecide(t *testing.T) {
	for _, tc := range []struct {
		names  []string
		module string
		ok     bool
	}{
		{nil, ".", true},
		{[]string{"context", "semaphore", "admission"}, ".", true},
		{[]string{"etcdsem", "context"}, "etcdsem", true},
		{[]string{"prom", "prometheus", "semaphore"}, "metrics/prom", true},
		{[]string{"otel", "metric"}, "metrics/otel", true},
		{[]string{"prom", "otel"}, "metrics/otel and metrics/prom", false},
	} {
		m, ok := moduleOf(tc.names)
		assert.Equal(t, tc.module, m, "%v", tc.names)
		assert.Equal(t, tc.ok, ok, "%v", tc.names)
	}
}
