package otel

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/fairsem/semaphore/keyed"
)

// KeyedMetrics is the instrument set for one keyed.Set: its state and counters,
// observed from Stats at each collection, and the units held and calls waiting
// of its topKeys keys holding the most units, observed from ActiveKeys. Every
// measurement carries keyed.set.name (keyed.WithName); the per-key ones also
// carry keyed.key.
//
// Per-key measurements are bounded by topKeys, never one per active key: a set
// with a key per tenant or per user would otherwise create attribute sets
// without bound. A key is observed while it is among the topKeys; once it
// leaves them, or stops being active, it is no longer reported. A key or set
// name that is not valid UTF-8 is reported with its invalid bytes replaced by
// U+FFFD; of two keys that then read alike, only the one holding the most units
// is reported.
//
// All methods are safe for concurrent use.
type KeyedMetrics struct {
	reg metric.Registration
}

const (
	keySet = attribute.Key("keyed.set.name")
	keyKey = attribute.Key("keyed.key")
)

// NewKeyedMetrics creates the instruments for set on meter, observing at most
// topKeys keys, those holding the most units (then with the most calls
// waiting); topKeys = 0 observes none. It returns the meter's error if an
// instrument or the callback cannot be registered, and panics if set is nil or
// the zero Set, or if topKeys is negative.
func NewKeyedMetrics(meter metric.Meter, set *keyed.Set, topKeys int) (*KeyedMetrics, error) {
	if set == nil {
		panic("otel: NewKeyedMetrics(nil)")
	}
	if topKeys < 0 {
		panic(fmt.Sprintf("otel: NewKeyedMetrics: set %q: topKeys %d is negative", set.Name(), topKeys))
	}
	name := keySet.String(strings.ToValidUTF8(set.Stats().Name, "\uFFFD")) // Stats panics for a zero Set
	_, hasLimit := set.Limit()                                             // fixed after keyed.New
	var (
		errs                       [9]error
		keys, limit, held, pending metric.Int64ObservableUpDownCounter
		keyHeld, keyPending        metric.Int64ObservableUpDownCounter
		broken                     metric.Int64ObservableGauge
		acquisitions, failures     metric.Int64ObservableCounter
	)
	keys, errs[0] = meter.Int64ObservableUpDownCounter("keyed.keys", metric.WithUnit("{key}"),
		metric.WithDescription("Keys active now: with holders or calls in progress."))
	limit, errs[1] = meter.Int64ObservableUpDownCounter("keyed.limit", metric.WithUnit("{unit}"),
		metric.WithDescription("The set's limit on the units held by all keys together (WithLimit); only for a set with one."))
	held, errs[2] = meter.Int64ObservableUpDownCounter("keyed.units.held", metric.WithUnit("{unit}"),
		metric.WithDescription("Units held now, summed over keys."))
	pending, errs[3] = meter.Int64ObservableUpDownCounter("keyed.pending_requests", metric.WithUnit("{request}"),
		metric.WithDescription("Calls waiting now, for their key's units or the global level's."))
	broken, errs[4] = meter.Int64ObservableGauge("keyed.broken", metric.WithUnit("1"),
		metric.WithDescription("1 once the set is broken, else 0."))
	acquisitions, errs[5] = meter.Int64ObservableCounter("keyed.acquisitions", metric.WithUnit("{acquisition}"),
		metric.WithDescription("Successful acquisitions, waited for or not (TryAcquire included)."))
	failures, errs[6] = meter.Int64ObservableCounter("keyed.failures", metric.WithUnit("{request}"),
		metric.WithDescription("Calls that failed, by error.type: timed_out (a deadline: AcquireTimeout's or the context's), cancelled (a context cancelled), rejected (a queue full, or larger than the key's capacity, the limit or the global capacity)."))
	keyHeld, errs[7] = meter.Int64ObservableUpDownCounter("keyed.key.units.held", metric.WithUnit("{unit}"),
		metric.WithDescription("Units held now by one of the keys holding the most, by keyed.key."))
	keyPending, errs[8] = meter.Int64ObservableUpDownCounter("keyed.key.pending_requests", metric.WithUnit("{request}"),
		metric.WithDescription("Calls waiting now on one of the keys holding the most, by keyed.key."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	m := &KeyedMetrics{}
	one := metric.WithAttributes(name)
	var err error
	m.reg, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := set.Stats()
		o.ObserveInt64(keys, int64(st.Keys), one)
		if hasLimit {
			o.ObserveInt64(limit, st.Limit, one)
		}
		o.ObserveInt64(held, st.Held, one)
		o.ObserveInt64(pending, int64(st.Waiters), one)
		o.ObserveInt64(broken, boolValue(st.Broken), one)
		o.ObserveInt64(acquisitions, int64(st.Acquired), one)
		for _, f := range []struct {
			kind string
			n    uint64
		}{{"timed_out", st.TimedOut}, {"cancelled", st.Cancelled}, {"rejected", st.Rejected}} {
			o.ObserveInt64(failures, int64(f.n), metric.WithAttributes(name, keyErrorType.String(f.kind)))
		}
		if topKeys == 0 {
			return nil
		}
		rows := set.ActiveKeys(topKeys)
		seen := make(map[string]bool, len(rows)) // not topKeys, which may be huge
		for _, k := range rows {
			key := strings.ToValidUTF8(k.Key, "\uFFFD")
			if seen[key] { // two keys read alike: the first holds more
				continue
			}
			seen[key] = true
			attrs := metric.WithAttributes(name, keyKey.String(key))
			o.ObserveInt64(keyHeld, k.Held, attrs)
			o.ObserveInt64(keyPending, int64(k.Waiters), attrs)
		}
		return nil
	}, keys, limit, held, pending, broken, acquisitions, failures, keyHeld, keyPending)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Unregister removes the collection callback from the meter; the instruments
// then report nothing more.
func (m *KeyedMetrics) Unregister() error { return m.reg.Unregister() }
