package semdebug

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// The text form, for curl: names, holder labels and causes are quoted with
// strconv.Quote, and so are the object's own words (kinds, sites, details)
// that need it, so that no value can forge a row or a column, or send
// terminal escapes.

// kindText is k as it is, or quoted when it holds anything a quote would
// escape: a kind shows next to a quoted name, which it must not pass for.
func kindText(k string) string {
	for _, c := range k {
		if c == '"' || c == '\\' || !strconv.IsPrint(c) {
			return strconv.Quote(k)
		}
	}
	return ownText(k)
}

// ownText is s, an object's own words, as it is, or quoted when it is not
// valid UTF-8 or holds a character that is not printable (a line break, a
// tab, an escape), which would break its row or its columns.
func ownText(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, c := range s {
		if !strconv.IsPrint(c) {
			return strconv.Quote(s)
		}
	}
	return s
}

func writeIndexText(w io.Writer, idx index) {
	fmt.Fprintf(w, "%d objects, %d stalled (head waiting over %v), read at %s\n\n",
		len(idx.Rows), idx.Stalled, idx.Threshold, idx.At.UTC().Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "\tID")
	for _, c := range columns {
		fmt.Fprint(tw, "\t", strings.ToUpper(c.Title))
	}
	fmt.Fprintln(tw)
	var cells []string
	var line []byte
	for i := range idx.Rows {
		r := idx.Rows[i]
		line = line[:0]
		if r.Stalled {
			line = append(line, "STALLED"...)
		}
		line = append(line, '\t')
		line = strconv.AppendUint(line, r.ID, 10)
		line = append(line, '\t')
		line = strconv.AppendQuote(line, r.Key)
		line = append(line, '\t')
		line = append(line, kindText(r.Kind)...)
		cells = r.appendCells(cells[:0])
		for _, c := range cells {
			line = append(line, '\t')
			line = append(line, c...)
		}
		line = append(line, '\n')
		tw.Write(line)
	}
	tw.Flush()
}

func writeObjectText(w io.Writer, o object) {
	fmt.Fprintf(w, "%s %s (id %d)", kindText(o.Kind), strconv.Quote(o.Key), o.ID)
	if o.Stalled {
		fmt.Fprintf(w, ": STALLED, head waiting over %v", o.Threshold)
	}
	fmt.Fprintf(w, "\nread at %s\n\n", o.At.UTC().Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "capacity\t%s\nin use\t%s\navailable\t%s\nwaiters\t%s\n",
		o.CapacityText(), o.HeldText(), o.AvailableText(), o.WaitersText())
	fmt.Fprintf(tw, "head wait\t%s\noldest holder\t%s\nbroken\t%s\n", o.HeadWaitText(), ageText(o.OldestHolder), o.BrokenText())
	for _, c := range o.Counters() {
		fmt.Fprintf(tw, "%s\t%s", c.Title, c.Total)
		if c.Rate != "" {
			fmt.Fprintf(tw, " (%s/s)", c.Rate)
		}
		fmt.Fprintln(tw)
	}
	for _, d := range o.Details {
		fmt.Fprintf(tw, "%s\t%s\n", ownText(d.Name), ownText(d.Value))
	}
	tw.Flush()
	if len(o.Holders) > 0 {
		fmt.Fprintln(w, "\nholders, oldest first:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  HOLDERS\tUNITS\tOLDEST\tSITE\tLABEL")
		for _, h := range o.Holders {
			fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s\n", h.Holders, h.Units, ageText(h.Age), ownText(h.Site), strconv.Quote(h.Label))
		}
		tw.Flush()
	}
	if len(o.Waiting) > 0 {
		fmt.Fprintln(w, "\nwaiters, head first:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  POSITION\tUNITS\tWAITED")
		for i, wt := range o.Waiting {
			fmt.Fprintf(tw, "  %d\t%d\t%s\n", i+1, wt.Units, ageText(wt.Waited))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nhistory: %d samples\n", len(o.History))
	fmt.Fprintf(w, "\ndiagnostics:\n%s", o.Diagnostics)
}
