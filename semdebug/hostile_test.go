package semdebug

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/hostile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// everywhere is a reading that carries v in every text field a user or a peer
// controls: its kind, cause, holder's site and label, and a detail's name and
// value (the name is newFake's).
func everywhere(v string) semaphore.Reading {
	return semaphore.Reading{Kind: v, Capacity: 2, Held: 1, Waiters: 1, Broken: true, Cause: v,
		Holders: []semaphore.HolderGroup{{Site: v, Label: v, Holders: 1, Units: 1, Age: time.Second}},
		Waiting: []semaphore.WaitingCall{{Units: 1, Waited: time.Second}},
		Details: []semaphore.Detail{{Name: v, Value: v}}}
}

// asJSON is s as encoding/json writes it: each byte that is not UTF-8 becomes
// U+FFFD.
func asJSON(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r) // ranging over a string yields U+FFFD for each invalid byte
	}
	return b.String()
}

// Every value a user or a peer controls stays one value on every form: on the
// text forms it is quoted (names, causes, labels) or, the object's own words
// (kinds, sites, details), quoted when it would break its row, so that the
// page has as many lines as with a plain value; in HTML it is escaped, never
// markup; in JSON it comes back as given.
func TestHandler_EveryValueAUserGivesStaysOneValueOnEveryForm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lines := func(v string, path string) (int, string) {
			r := newRegistry()
			f := newFake(v, everywhere(v))
			f.dump = "the object's own dump, which quotes what it shows\n"
			unregister := registerKept(r, f)
			defer unregister()
			_, _, body := get(t, newHandler(r), path)
			return strings.Count(body, "\n"), body
		}
		plainIndex, _ := lines("plain", "/d/?format=text")
		plainObject, _ := lines("plain", "/d/1?format=text")
		for _, h := range hostile.Texts {
			quoted := strconv.Quote(h.Value)
			n, body := lines(h.Value, "/d/?format=text")
			assert.Equal(t, plainIndex, n, "%s: the index has the lines it has for a plain value:\n%s", h.Name, body)
			assert.Contains(t, body, quoted, h.Name)
			n, body = lines(h.Value, "/d/1?format=text")
			assert.Equal(t, plainObject, n, "%s: the object's page has the lines it has for a plain value:\n%s", h.Name, body)
			assert.Contains(t, body, quoted+" (id 1)", "%s: the name", h.Name)
			assert.Contains(t, body, "yes: "+quoted+"\n", "%s: the cause", h.Name)
			assert.Contains(t, body, "  "+quoted+"\n", "%s: the label", h.Name)
			assert.NotContains(t, body, "\x1b", h.Name)
			assert.True(t, utf8.ValidString(body), "%s: the text form is UTF-8", h.Name)

			for _, path := range []string{"/d/", "/d/1"} {
				_, body = lines(h.Value, path)
				if strings.ContainsAny(h.Value, `<>"'&`) {
					assert.NotContains(t, body, h.Value, "%s %s: escaped", h.Name, path)
				}
				assert.NotContains(t, body, "<script>alert", "%s %s", h.Name, path)
				assert.NotContains(t, body, "<img", "%s %s", h.Name, path)
			}

			_, body = lines(h.Value, "/d/1?format=json")
			var obj jsonObject
			require.NoError(t, json.Unmarshal([]byte(body), &obj), h.Name)
			want := asJSON(h.Value)
			assert.Equal(t, want, obj.Name, h.Name)
			assert.Equal(t, want, obj.Kind, h.Name)
			assert.Equal(t, want, obj.Cause, h.Name)
			assert.Equal(t, []jsonHolder{{want, want, 1, 1, 1}}, obj.Holders, h.Name)
			assert.Equal(t, []jsonDetail{{want, want}}, obj.Details, h.Name)
		}
	})
}
