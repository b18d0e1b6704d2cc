package semdebug

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/fairsem/semaphore"
)

// The JSON form: durations in seconds, rates per second (null until known).

type jsonIndex struct {
	At                   time.Time `json:"at"`
	StallThresholdSecond float64   `json:"stall_threshold_seconds"`
	Stalled              int       `json:"stalled"`
	Objects              []jsonRow `json:"objects"`
}

// jsonRow is an object's reading; a number the source does not know is null,
// and so are capacity and available for an object with no limit in total.
type jsonRow struct {
	ID                  uint64   `json:"id"`
	Key                 string   `json:"key"`
	Name                string   `json:"name"`
	Kind                string   `json:"kind"`
	Stalled             bool     `json:"stalled"`
	Unlimited           bool     `json:"unlimited"`
	Capacity            *int64   `json:"capacity"`
	InUse               *int64   `json:"in_use"`
	Available           *int64   `json:"available"`
	Waiters             *int64   `json:"waiters"`
	HeadWaitSeconds     float64  `json:"head_wait_seconds"`
	HeadWaitIsBound     bool     `json:"head_wait_is_lower_bound"`
	OldestHolderSeconds float64  `json:"oldest_holder_seconds"`
	Broken              *bool    `json:"broken"`
	Cause               string   `json:"cause,omitempty"`
	Acquired            *uint64  `json:"acquired"`
	Queued              *uint64  `json:"queued"`
	TimedOut            *uint64  `json:"timed_out"`
	Cancelled           *uint64  `json:"cancelled"`
	Rejected            *uint64  `json:"rejected"`
	Shed                *uint64  `json:"shed"`
	AcquiredPerSecond   *float64 `json:"acquired_per_second"`
	TimedOutPerSecond   *float64 `json:"timed_out_per_second"`
	CancelledPerSecond  *float64 `json:"cancelled_per_second"`
	RejectedPerSecond   *float64 `json:"rejected_per_second"`
	ShedPerSecond       *float64 `json:"shed_per_second"`
}

type jsonObject struct {
	jsonRow
	Holders     []jsonHolder `json:"holders"`
	WaitList    []jsonWaiter `json:"wait_list"`
	Details     []jsonDetail `json:"details"`
	History     []jsonPoint  `json:"history"`
	Diagnostics string       `json:"diagnostics"`
}

type jsonHolder struct {
	Site       string  `json:"site"`
	Label      string  `json:"label"`
	Holders    int     `json:"holders"`
	Units      int64   `json:"units"`
	AgeSeconds float64 `json:"age_seconds"`
}

type jsonWaiter struct {
	Units         int64   `json:"units"`
	WaitedSeconds float64 `json:"waited_seconds"`
}

type jsonDetail struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type jsonPoint struct {
	At              time.Time `json:"at"`
	InUse           int64     `json:"in_use"`
	Waiters         int64     `json:"waiters"`
	HeadWaitSeconds float64   `json:"head_wait_seconds"`
}

func indexJSON(idx index) jsonIndex {
	out := jsonIndex{At: idx.At.UTC(), StallThresholdSecond: idx.Threshold.Seconds(), Stalled: idx.Stalled,
		Objects: make([]jsonRow, len(idx.Rows))}
	for i := range idx.Rows {
		out.Objects[i] = rowJSON(idx.Rows[i])
	}
	return out
}

func rowJSON(r *row) jsonRow {
	// The values the fields point at, in one allocation per row.
	v := &struct {
		capacity, inUse, available, waiters        int64
		broken                                     bool
		acquired, queued, timedOut, cancelled      uint64
		rejected, shed                             uint64
		acquiredPS, timedOutPS, cancelledPS, rejPS float64
		shedPS                                     float64
	}{r.Capacity, r.Held, r.Available, int64(r.Waiters), r.Broken, r.Acquired, r.Queued, r.TimedOut, r.Cancelled,
		r.Rejected, r.Shed, r.Rates.Acquired, r.Rates.TimedOut, r.Rates.Cancelled, r.Rates.Rejected, r.Rates.Shed}
	known := func(f semaphore.Fields) bool { return r.Unknown&f == 0 }
	limited := known(semaphore.CapacityField) && !r.Unlimited
	perSecond := func(f semaphore.Fields, p *float64) *float64 { return opt(known(f) && r.Rates.Known, p) }
	return jsonRow{
		ID: r.ID, Key: r.Key, Name: r.Name, Kind: r.Kind, Stalled: r.Stalled, Unlimited: r.Unlimited,
		Capacity: opt(limited, &v.capacity), InUse: opt(known(semaphore.HeldField), &v.inUse), Available: opt(limited, &v.available),
		Waiters: opt(known(semaphore.WaitersField), &v.waiters), HeadWaitSeconds: r.HeadWait.Seconds(), HeadWaitIsBound: r.HeadWaitBound,
		OldestHolderSeconds: r.OldestHolder.Seconds(), Broken: opt(known(semaphore.BrokenField), &v.broken), Cause: r.Cause,
		Acquired: opt(known(semaphore.AcquiredField), &v.acquired), Queued: opt(known(semaphore.QueuedField), &v.queued),
		TimedOut: opt(known(semaphore.TimedOutField), &v.timedOut), Cancelled: opt(known(semaphore.CancelledField), &v.cancelled),
		Rejected: opt(known(semaphore.RejectedField), &v.rejected), Shed: opt(known(semaphore.ShedField), &v.shed),
		AcquiredPerSecond: perSecond(semaphore.AcquiredField, &v.acquiredPS), TimedOutPerSecond: perSecond(semaphore.TimedOutField, &v.timedOutPS),
		CancelledPerSecond: perSecond(semaphore.CancelledField, &v.cancelledPS), RejectedPerSecond: perSecond(semaphore.RejectedField, &v.rejPS),
		ShedPerSecond: perSecond(semaphore.ShedField, &v.shedPS),
	}
}

// opt is p when known, else nil: null in JSON.
func opt[T any](known bool, p *T) *T {
	if !known {
		return nil
	}
	return p
}

func objectJSON(o object) jsonObject {
	out := jsonObject{jsonRow: rowJSON(&o.row), Diagnostics: o.Diagnostics,
		Holders: []jsonHolder{}, WaitList: []jsonWaiter{}, Details: []jsonDetail{}, History: []jsonPoint{}}
	for _, h := range o.Holders {
		out.Holders = append(out.Holders, jsonHolder{h.Site, h.Label, h.Holders, h.Units, h.Age.Seconds()})
	}
	for _, w := range o.Waiting {
		out.WaitList = append(out.WaitList, jsonWaiter{w.Units, w.Waited.Seconds()})
	}
	for _, d := range o.Details {
		out.Details = append(out.Details, jsonDetail(d))
	}
	for _, p := range o.History {
		out.History = append(out.History, jsonPoint{p.At.UTC(), p.Held, p.Waiters, p.HeadWait.Seconds()})
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v) // an error means the client went away: nobody to tell
}
