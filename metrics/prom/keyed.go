package prom

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fairsem/semaphore/keyed"
)

// A KeyedCollector exports one keyed.Set: its state and counters, read from
// Stats at each scrape, and the units held and calls waiting of its topKeys
// keys holding the most units, read from ActiveKeys. Every metric carries the
// label set="NAME" (keyed.WithName); the per-key metrics also carry key="KEY".
//
// Per-key series are bounded by topKeys, never one per active key: a set with
// a key per tenant or per user would otherwise create series without bound. A
// key has series while it is among the topKeys; once it leaves them, or stops
// being active, its series are no longer exported. A key or set name that is
// not valid UTF-8 is exported with its invalid bytes replaced by U+FFFD; of two
// keys that then read alike, only the one holding the most units is exported.
//
// All methods are safe for concurrent use.
type KeyedCollector struct {
	set      *keyed.Set
	name     string // the set's name, its invalid UTF-8 replaced; fixed
	hasLimit bool   // the set has WithLimit; fixed after keyed.New
	topKeys  int    // at most this many keys get series; fixed
}

var (
	keyedLabels    = []string{"set"}
	keyedKeyLabels = []string{"set", "key"}

	descKeyedKeys      = prometheus.NewDesc("keyed_keys", "Keys active now: with holders or calls in progress.", keyedLabels, nil)
	descKeyedLimit     = prometheus.NewDesc("keyed_limit_units", "The set's limit on the units held by all keys together (WithLimit); only for a set with one.", keyedLabels, nil)
	descKeyedHeld      = prometheus.NewDesc("keyed_held_units", "Units held now, summed over keys.", keyedLabels, nil)
	descKeyedWaiters   = prometheus.NewDesc("keyed_waiters", "Calls waiting now, for their key's units or the global level's.", keyedLabels, nil)
	descKeyedBroken    = prometheus.NewDesc("keyed_broken", "1 once the set is broken, else 0.", keyedLabels, nil)
	descKeyedAcquired  = prometheus.NewDesc("keyed_acquired_total", "Successful acquisitions, waited for or not (TryAcquire included).", keyedLabels, nil)
	descKeyedTimedOut  = prometheus.NewDesc("keyed_timed_out_total", "Calls that failed on a deadline: AcquireTimeout's or the context's.", keyedLabels, nil)
	descKeyedCancelled = prometheus.NewDesc("keyed_cancelled_total", "Calls whose context was cancelled (a deadline counts as timed out).", keyedLabels, nil)
	descKeyedRejected  = prometheus.NewDesc("keyed_rejected_total", "Calls refused: a queue full, or larger than the key's capacity, the limit or the global capacity.", keyedLabels, nil)
	descKeyHeld        = prometheus.NewDesc("keyed_key_held_units", "Units held now by one of the keys holding the most.", keyedKeyLabels, nil)
	descKeyWaiters     = prometheus.NewDesc("keyed_key_waiters", "Calls waiting now on one of the keys holding the most.", keyedKeyLabels, nil)
)

// NewKeyedCollector returns a collector for set that exports per-key series for
// at most topKeys keys, those holding the most units (then with the most calls
// waiting); topKeys = 0 exports none. It panics if set is nil or the zero Set,
// or if topKeys is negative.
func NewKeyedCollector(set *keyed.Set, topKeys int) *KeyedCollector {
	if set == nil {
		panic("prom: NewKeyedCollector(nil)")
	}
	if topKeys < 0 {
		panic(fmt.Sprintf("prom: NewKeyedCollector: set %q: topKeys %d is negative", set.Name(), topKeys))
	}
	name := strings.ToValidUTF8(set.Stats().Name, "\uFFFD") // Stats panics for a zero Set
	_, hasLimit := set.Limit()
	return &KeyedCollector{set: set, name: name, hasLimit: hasLimit, topKeys: topKeys}
}

// Describe implements prometheus.Collector.
func (c *KeyedCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descKeyedKeys, descKeyedLimit, descKeyedHeld, descKeyedWaiters, descKeyedBroken,
		descKeyedAcquired, descKeyedTimedOut, descKeyedCancelled, descKeyedRejected, descKeyHeld, descKeyWaiters} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: one Stats call, and one ActiveKeys
// call when topKeys > 0.
func (c *KeyedCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.set.Stats()
	emit := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, append([]string{c.name}, labels...)...)
	}
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	emit(descKeyedKeys, gauge, float64(st.Keys))
	if c.hasLimit {
		emit(descKeyedLimit, gauge, float64(st.Limit))
	}
	emit(descKeyedHeld, gauge, float64(st.Held))
	emit(descKeyedWaiters, gauge, float64(st.Waiters))
	emit(descKeyedBroken, gauge, boolValue(st.Broken))
	emit(descKeyedAcquired, counter, float64(st.Acquired))
	emit(descKeyedTimedOut, counter, float64(st.TimedOut))
	emit(descKeyedCancelled, counter, float64(st.Cancelled))
	emit(descKeyedRejected, counter, float64(st.Rejected))
	if c.topKeys == 0 {
		return
	}
	rows := c.set.ActiveKeys(c.topKeys)
	seen := make(map[string]bool, len(rows)) // not topKeys, which may be huge
	for _, k := range rows {
		key := strings.ToValidUTF8(k.Key, "\uFFFD")
		if seen[key] { // two keys read alike: the first holds more
			continue
		}
		seen[key] = true
		emit(descKeyHeld, gauge, float64(k.Held), key)
		emit(descKeyWaiters, gauge, float64(k.Waiters), key)
	}
}
