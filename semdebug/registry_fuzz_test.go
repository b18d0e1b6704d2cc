package semdebug

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/stretchr/testify/require"
)

// FuzzRegistryModel runs a program of registrations, unregistrations, Record
// calls and renderings against a model that counts registrations per object,
// and checks after each step that the page lists exactly the objects with a
// registration left, each under the id it got when first registered since it
// was last absent, and that ids are never reused.
func FuzzRegistryModel(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 4, 0, 1, 1, 4})
	f.Add([]byte{0, 1, 0, 1, 2, 1, 4, 1, 0, 3, 0, 4, 1, 1, 4})
	f.Add([]byte{0, 2, 0, 2, 1, 0, 1, 0, 1, 1, 4, 0, 2, 4})
	f.Add([]byte{0, 3, 2, 3, 1, 0, 3, 0, 4, 5, 0, 4})
	f.Fuzz(func(t *testing.T, prog []byte) {
		synctest.Test(t, func(t *testing.T) {
			const objects = 4
			r := newRegistry()
			h := newHandler(r)
			fakes := make([]*fakeSource, objects)
			for i := range fakes {
				fakes[i] = newFake(fmt.Sprintf("obj%d", i), semaphore.Reading{Capacity: int64(i)})
			}
			type handle struct {
				obj  int
				undo func()
				used bool
			}
			var (
				registrations, records []*handle
				refs                   [objects]int
				ids                    [objects]uint64 // while registered
				lastID                 uint64
			)
			for i := 0; i+1 < len(prog); i += 2 {
				op, arg := prog[i]%6, int(prog[i+1])
				obj := arg % objects
				switch op {
				case 0: // register
					registrations = append(registrations, &handle{obj: obj, undo: registerPtr(r, fakes[obj])})
					if refs[obj] == 0 {
						lastID++
						ids[obj] = lastID
					}
					refs[obj]++
				case 1: // unregister, perhaps twice
					if len(registrations) == 0 {
						continue
					}
					hd := registrations[arg%len(registrations)]
					hd.undo()
					if !hd.used {
						hd.used = true
						refs[hd.obj]--
					}
				case 2: // record
					if refs[obj] == 0 {
						require.Panics(t, func() { recordPtr(r, fakes[obj]) })
						continue
					}
					records = append(records, &handle{obj: obj, undo: recordPtr(r, fakes[obj])})
				case 3: // stop recording
					if len(records) > 0 {
						records[arg%len(records)].undo()
					}
				case 4: // let time pass
					time.Sleep(time.Duration(arg) * 100 * time.Millisecond)
				case 5: // view an object's page
					code, _, _ := get(t, h, fmt.Sprintf("/d/%d?format=json", arg%(int(lastID)+2)))
					require.Contains(t, []int{200, 404}, code)
				}

				var want []uint64
				for o := range objects {
					if refs[o] > 0 {
						want = append(want, ids[o])
					}
				}
				slices.Sort(want)
				var got []uint64
				for _, row := range h.index("", false).Rows {
					got = append(got, row.ID)
				}
				slices.Sort(got)
				require.Equal(t, want, got, "after step %d (op %d)", i/2, op)
				for o := range objects {
					if refs[o] > 0 {
						require.Equal(t, fakes[o].snap.Name, r.lookup(ids[o]).load().Reading().Name)
					}
				}
				r.mu.Lock()
				require.Equal(t, len(r.entries), len(r.byPtr))
				r.mu.Unlock()
			}
			for _, hd := range records {
				hd.undo()
			}
			for _, hd := range registrations {
				hd.undo()
			}
			synctest.Wait()
			require.False(t, samplerRunning(r), "with nothing registered the sampler exits")
		})
	})
}
