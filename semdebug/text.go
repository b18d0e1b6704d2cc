package semdebug

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// The text form, for curl: names are quoted with strconv.Quote, so a hostile
// name can neither forge a row nor send terminal escapes.

func writeIndexText(w io.Writer, idx index) {
	fmt.Fprintf(w, "%d objects, %d stalled (head waiting over %v), read at %s\n\n",
		len(idx.Rows), idx.Stalled, idx.Threshold, idx.At.UTC().Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tID\tNAME\tKIND\tCAPACITY\tIN USE\tAVAILABLE\tWAITERS\tHEAD WAIT\tOLDEST HOLDER\tBROKEN\tACQUIRED/S\tTIMED OUT/S\tSHED/S")
	for i := range idx.Rows {
		r := idx.Rows[i]
		mark := ""
		if r.Stalled {
			mark = "STALLED"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", mark, r.ID,
			strconv.Quote(r.Key), r.Kind, r.Capacity, r.InUse, r.Available, r.Waiters,
			r.HeadWaitText(), ageText(r.OldestHolder), yesNo(r.Broken),
			rateText(r.Rates, r.Rates.Acquired), rateText(r.Rates, r.Rates.TimedOut), rateText(r.Rates, r.Rates.Shed))
	}
	tw.Flush()
}

func writeObjectText(w io.Writer, o object) {
	fmt.Fprintf(w, "%s %s (id %d)", o.Kind, strconv.Quote(o.Key), o.ID)
	if o.Stalled {
		fmt.Fprintf(w, ": STALLED, head waiting over %v", o.Threshold)
	}
	fmt.Fprintf(w, "\nread at %s\n\n", o.At.UTC().Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "capacity\t%d\nin use\t%d\navailable\t%d\nwaiters\t%d\n", o.Capacity, o.InUse, o.Available, o.Waiters)
	fmt.Fprintf(tw, "head wait\t%s\noldest holder\t%s\nbroken\t%s\n", o.HeadWaitText(), ageText(o.OldestHolder), o.BrokenText())
	fmt.Fprintf(tw, "acquired\t%d (%s/s)\ntimed out\t%d (%s/s)\nshed\t%d (%s/s)\n",
		o.Acquired, rateText(o.Rates, o.Rates.Acquired), o.TimedOut, rateText(o.Rates, o.Rates.TimedOut),
		o.Shed, rateText(o.Rates, o.Rates.Shed))
	for _, d := range o.Details {
		fmt.Fprintf(tw, "%s\t%s\n", d.Name, d.Value)
	}
	tw.Flush()
	if len(o.Holders) > 0 {
		fmt.Fprintln(w, "\nholders, oldest first:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  HOLDERS\tUNITS\tOLDEST\tSITE\tLABEL")
		for _, h := range o.Holders {
			fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s\n", h.Holders, h.Units, ageText(h.Age), h.Site, strconv.Quote(h.Label))
		}
		tw.Flush()
	}
	if len(o.WaitList) > 0 {
		fmt.Fprintln(w, "\nwaiters, head first:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  POSITION\tUNITS\tWAITED")
		for i, wt := range o.WaitList {
			fmt.Fprintf(tw, "  %d\t%d\t%s\n", i+1, wt.Units, ageText(wt.Waited))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nhistory: %d samples\n", len(o.History))
	fmt.Fprintf(w, "\ndiagnostics:\n%s", o.Diagnostics)
}

// HeadWaitText shows the head waiter's wait, with ">=" when it is the page's
// lower bound.
func (r reading) HeadWaitText() string {
	if r.Waiters == 0 {
		return "-"
	}
	if r.HeadWaitBound {
		return ">=" + roundDuration(r.HeadWait).String()
	}
	return roundDuration(r.HeadWait).String()
}

func ageText(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return roundDuration(d).String()
}

// BrokenText says whether the object is broken, and why.
func (r reading) BrokenText() string {
	switch {
	case !r.Broken:
		return "no"
	case r.Cause != "":
		return "yes: " + r.Cause
	}
	return "yes"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func rateText(r rates, v float64) string {
	if !r.Known {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// roundDuration keeps two significant figures' worth: whole seconds past 10s,
// tenths below, milliseconds below a second.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
