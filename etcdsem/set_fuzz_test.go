package etcdsem

import (
	"strings"
	"testing"
)

// FuzzSetKeys checks the layout of a Set's keys against its model, for any
// two keys of any two Sets: each key's prefix is the prefix of its own etcd
// keys only; the watch finds a key's prefix from any of its etcd keys; and
// the key is read back from its prefix.
func FuzzSetKeys(f *testing.F) {
	for _, seed := range [][3]string{
		{"jobs", "a", "a/b"},
		{"jobs", "", "%"},
		{"a/b", "c", "b/c"},
		{"a", "k/x", "x"},
		{"%2F", "%2F", "/"},
		{"s", "line\nbreak", "q"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	unescape := strings.NewReplacer("%2F", "/", "%25", "%")
	f.Fuzz(func(t *testing.T, name, a, b string) {
		if name == "" {
			return
		}
		s := &Set{prefix: setPrefix(name)}
		la, lb := setKeysOf(s.prefix, a), setKeysOf(s.prefix, b)
		for _, l := range []keyLayout{la, lb} {
			for _, k := range []string{l.capKey, l.brokenKey, l.qprefix + "0123456789abcdef-1", l.rprefix + "x"} {
				if got := s.keyPrefixOf([]byte(k)); got != l.prefix {
					t.Fatalf("the prefix of %q is %q, want %q", k, got, l.prefix)
				}
			}
			if !strings.HasPrefix(l.prefix, s.prefix) || strings.HasPrefix(l.prefix, KeyPrefix(name)+"q/") || strings.HasPrefix(l.prefix, KeyPrefix(name)+"r/") {
				t.Fatalf("%q is not under the Set's prefix apart from the semaphore %q's keys", l.prefix, name)
			}
		}
		if got := unescape.Replace(strings.TrimSuffix(la.prefix[len(s.prefix):], "/")); got != a {
			t.Fatalf("key %q read back as %q", a, got)
		}
		if a != b && (strings.HasPrefix(la.qprefix+"x", lb.prefix) || strings.HasPrefix(lb.qprefix+"x", la.prefix)) {
			t.Fatalf("keys %q and %q: one's keys start with the other's prefix (%q, %q)", a, b, la.prefix, lb.prefix)
		}
	})
}
