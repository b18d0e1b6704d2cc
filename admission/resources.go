package admission

import (
	"fmt"
	"strconv"
)

// Resources is an amount of the two resources a Controller bounds: Count, the
// number of concurrent permits, and Memory, in bytes. Amounts may be negative:
// availability goes below zero when memory is consumed after admission.
type Resources struct {
	Count  int64
	Memory int64
}

// Add returns r + o.
func (r Resources) Add(o Resources) Resources {
	return Resources{Count: r.Count + o.Count, Memory: r.Memory + o.Memory}
}

// Sub returns r - o.
func (r Resources) Sub(o Resources) Resources {
	return Resources{Count: r.Count - o.Count, Memory: r.Memory - o.Memory}
}

// Covers reports whether r holds at least o of each resource.
func (r Resources) Covers(o Resources) bool {
	return r.Count >= o.Count && r.Memory >= o.Memory
}

// IsZero reports whether both resources are zero.
func (r Resources) IsZero() bool { return r == Resources{} }

// String formats r as "count=2 memory=6M".
func (r Resources) String() string {
	return fmt.Sprintf("count=%d memory=%s", r.Count, formatBytes(r.Memory))
}

// formatBytes writes memory the way the diagnostics dump does: 0B, 512B, 6060K, 26M,
// 3G (binary units, truncated to the largest unit that keeps four digits or fewer).
func formatBytes(n int64) string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"G", 30}, {"M", 20}, {"K", 10}} {
		if n >= 10<<u.shift {
			return sign + strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return sign + strconv.FormatInt(n, 10) + "B"
}
