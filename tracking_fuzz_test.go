package semaphore_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// FuzzHolderTracking runs a sequence of Units operations on a tracked semaphore
// against a model of what each Units holds, and checks after every step that the
// dump lists exactly the Units that hold units, with their total, and counts the
// rest as held outside Units.
//
// Each operation is two bytes: the operation and its argument. Up to eight Units
// live in slots.
func FuzzHolderTracking(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 3, 1, 1, 2, 0, 3, 0, 4, 1, 5, 0},
		{0, 5, 0, 2, 1, 2, 1, 9, 3, 1, 6, 3, 7, 0},
		{0, 1, 0, 1, 0, 1, 4, 0, 4, 1, 6, 2, 7, 2},
		{6, 4, 0, 2, 2, 0, 2, 1, 3, 2, 5, 1, 5, 0},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, prog []byte) {
		const capacity = 16
		s := semaphore.New(capacity, semaphore.WithHolderTracking())
		var slots []*semaphore.Units
		var model []int64 // units each slot's Units holds
		var outside int64 // units taken by plain Consume/Acquire or Detach
		pick := func(b byte) int { return int(b) % len(slots) }
		for i := 0; i+1 < len(prog) && len(slots) < 8; i += 2 {
			op, arg := prog[i]%8, prog[i+1]
			switch {
			case op == 0: // AcquireUnits
				if u, ok := s.TryAcquireUnits(int64(arg%4) + 1); ok {
					slots, model = append(slots, u), append(model, int64(arg%4)+1)
				}
			case op == 1: // ConsumeUnits
				n := int64(arg % 3)
				slots, model = append(slots, s.ConsumeUnits(n)), append(model, n)
			case len(slots) == 0:
				continue
			case op == 2: // Release
				j := pick(arg)
				slots[j].Release()
				model[j] = 0
			case op == 3: // Split 1 off
				j := pick(arg)
				if part, err := slots[j].Split(1); err == nil {
					model[j]--
					slots, model = append(slots, part), append(model, 1)
				} else {
					require.Zero(t, model[j])
				}
			case op == 4: // Return 1
				j := pick(arg)
				if err := slots[j].Return(1); err == nil {
					model[j]--
				} else {
					require.Zero(t, model[j])
				}
			case op == 5: // Adopt the next slot
				j, k := pick(arg), pick(arg+1)
				require.NoError(t, slots[j].Adopt(slots[k]))
				if j != k {
					model[j], model[k] = model[j]+model[k], 0
				}
			case op == 6: // Detach
				j := pick(arg)
				outside += slots[j].Detach()
				model[j] = 0
			case op == 7: // give back what was detached
				if outside > 0 {
					s.Release(outside)
					outside = 0
				}
			}
			var holders int
			var tracked int64
			for _, n := range model {
				if n > 0 {
					holders++
					tracked += n
				}
			}
			dump := s.Diagnostics(0)
			if holders == 0 {
				require.Contains(t, dump, "holders: none tracked\n", "step %d", i/2)
			} else {
				require.Contains(t, dump, fmt.Sprintf("holders (%d, %d unit", holders, tracked), "step %d:\n%s", i/2, dump)
			}
			held := tracked + outside
			require.Contains(t, dump, fmt.Sprintf("held %d,", held), "step %d:\n%s", i/2, dump)
			if outside > 0 && holders > 0 {
				require.True(t, strings.Contains(dump, fmt.Sprintf("%d held, %d of them by", held, tracked)), "step %d:\n%s", i/2, dump)
			}
		}
		for _, u := range slots {
			u.Release()
		}
		s.Release(outside)
		require.Equal(t, int64(capacity), s.Available())
	})
}
