package semdebug

import (
	"encoding/json"
	"net/http"
	"time"
)

// The JSON form: durations in seconds, rates per second (null until known).

type jsonIndex struct {
	At                   time.Time `json:"at"`
	StallThresholdSecond float64   `json:"stall_threshold_seconds"`
	Stalled              int       `json:"stalled"`
	Objects              []jsonRow `json:"objects"`
}

type jsonRow struct {
	ID                  uint64   `json:"id"`
	Key                 string   `json:"key"`
	Name                string   `json:"name"`
	Kind                string   `json:"kind"`
	Stalled             bool     `json:"stalled"`
	Capacity            int64    `json:"capacity"`
	InUse               int64    `json:"in_use"`
	Available           int64    `json:"available"`
	Waiters             int      `json:"waiters"`
	HeadWaitSeconds     float64  `json:"head_wait_seconds"`
	HeadWaitIsBound     bool     `json:"head_wait_is_lower_bound"`
	OldestHolderSeconds float64  `json:"oldest_holder_seconds"`
	Broken              bool     `json:"broken"`
	Cause               string   `json:"cause,omitempty"`
	Acquired            uint64   `json:"acquired"`
	TimedOut            uint64   `json:"timed_out"`
	Shed                uint64   `json:"shed"`
	AcquiredPerSecond   *float64 `json:"acquired_per_second"`
	TimedOutPerSecond   *float64 `json:"timed_out_per_second"`
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
	out := jsonRow{
		ID: r.ID, Key: r.Key, Name: r.Name, Kind: r.Kind, Stalled: r.Stalled,
		Capacity: r.Capacity, InUse: r.InUse, Available: r.Available, Waiters: r.Waiters,
		HeadWaitSeconds: r.HeadWait.Seconds(), HeadWaitIsBound: r.HeadWaitBound,
		OldestHolderSeconds: r.OldestHolder.Seconds(), Broken: r.Broken, Cause: r.Cause,
		Acquired: r.Acquired, TimedOut: r.TimedOut, Shed: r.Shed,
	}
	if r.Rates.Known {
		out.AcquiredPerSecond, out.TimedOutPerSecond, out.ShedPerSecond = &r.Rates.Acquired, &r.Rates.TimedOut, &r.Rates.Shed
	}
	return out
}

func objectJSON(o object) jsonObject {
	out := jsonObject{jsonRow: rowJSON(&o.row), Diagnostics: o.Diagnostics,
		Holders: []jsonHolder{}, WaitList: []jsonWaiter{}, Details: []jsonDetail{}, History: []jsonPoint{}}
	for _, h := range o.Holders {
		out.Holders = append(out.Holders, jsonHolder{h.Site, h.Label, h.Holders, h.Units, h.Age.Seconds()})
	}
	for _, w := range o.WaitList {
		out.WaitList = append(out.WaitList, jsonWaiter{w.Units, w.Waited.Seconds()})
	}
	for _, d := range o.Details {
		out.Details = append(out.Details, jsonDetail(d))
	}
	for _, p := range o.History {
		out.History = append(out.History, jsonPoint{p.At.UTC(), p.InUse, p.Waiters, p.HeadWait.Seconds()})
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v) // an error means the client went away: nobody to tell
}
