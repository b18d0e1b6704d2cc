package amqpsem

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of names and slots. A queue name is an AMQP short string: at most
// 255 bytes. The longest queue of a semaphore is its A or B queue of the
// highest slot, NAME-SLOT-A, so a name of MaxNameLen bytes leaves room for
// slot numbers up to MaxSlots.
const (
	MaxNameLen = 240     // bytes of UTF-8
	MaxSlots   = 1000000 // slots of one semaphore
)

// reservedPrefixes start names no semaphore may take: the broker refuses
// queues named "amq.*", and "amqpsem." is left for this package's own queues.
var reservedPrefixes = []string{"amq.", "amqpsem."}

// CheckName reports whether name can name a semaphore, with an error wrapping
// ErrBadName that says why not. A name is 1 to MaxNameLen bytes of UTF-8 with
// no control characters, does not start with "amq." (the broker reserves it)
// or "amqpsem.", and does not end in "-DIGITS-A" or "-DIGITS-B": such a name,
// the name of its administration mutex queue, would be a slot queue of another
// semaphore (the name "jobs-1-A" would lock the first slot of "jobs").
func CheckName(name string) error {
	why := ""
	switch {
	case name == "":
		why = "the name is empty"
	case len(name) > MaxNameLen:
		why = fmt.Sprintf("the name has %d bytes, more than MaxNameLen (%d): its slot queues' names would exceed AMQP's 255 bytes", len(name), MaxNameLen)
	case !utf8.ValidString(name):
		why = "the name is not valid UTF-8"
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		i := strings.IndexFunc(name, unicode.IsControl)
		r, _ := utf8.DecodeRuneInString(name[i:])
		why = fmt.Sprintf("the name holds the control character %U at byte %d", r, i)
	}
	for _, p := range reservedPrefixes {
		if why == "" && strings.HasPrefix(name, p) {
			why = fmt.Sprintf("the name starts with the reserved prefix %q", p)
		}
	}
	if why == "" {
		if _, _, ok := parseSlotQueue(name); ok {
			why = "the name ends in -DIGITS-A or -DIGITS-B: it is another semaphore's slot queue"
		}
	}
	if why == "" {
		return nil
	}
	return &nameError{name: name, why: why}
}

// nameError is CheckName's error. Its message quotes at most the name's first
// 64 bytes: a 5,000-byte name would otherwise fill the log line.
type nameError struct{ name, why string }

func (e *nameError) Error() string {
	return "amqpsem " + quoteShort(e.name) + ": bad name: " + e.why + ": " + ErrBadName.Error()
}
func (e *nameError) Unwrap() error { return ErrBadName }

// quoteShort quotes s, cut after 64 bytes (at a rune boundary) with the length said.
func quoteShort(s string) string {
	const most = 64
	if len(s) <= most {
		return strconv.Quote(s)
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + fmt.Sprintf("... (%d bytes)", len(s))
}

// The queues of a semaphore, as the protocol names them.
func slotQueue(name string, slot int) string { return name + "-" + strconv.Itoa(slot) + "-A" }
func holdQueue(name string, slot int) string { return name + "-" + strconv.Itoa(slot) + "-B" }
func mutexQueue(name string) string          { return name }
func isSlotKind(kind byte) bool              { return kind == 'A' || kind == 'B' }
func slotOf(name, queue string) (int, byte, bool) {
	n, slot, kind, ok := splitQueue(queue)
	if !ok || n != name {
		return 0, 0, false
	}
	return slot, kind, true
}

// parseSlotQueue splits a queue name NAME-SLOT-A or NAME-SLOT-B.
func parseSlotQueue(q string) (name string, slot int, ok bool) {
	name, slot, _, ok = splitQueue(q)
	return name, slot, ok
}

// splitQueue splits NAME-SLOT-K, K being A or B and SLOT a decimal number
// without leading zeros (the only form this package writes, so that each
// queue has one reading).
func splitQueue(q string) (name string, slot int, kind byte, ok bool) {
	if len(q) < 5 || q[len(q)-2] != '-' || !isSlotKind(q[len(q)-1]) {
		return "", 0, 0, false
	}
	kind = q[len(q)-1]
	rest := q[:len(q)-2]
	dash := strings.LastIndexByte(rest, '-')
	if dash <= 0 {
		return "", 0, 0, false
	}
	digits := rest[dash+1:]
	if digits == "" || digits[0] == '0' && len(digits) > 1 {
		return "", 0, 0, false
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return "", 0, 0, false
		}
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return "", 0, 0, false
	}
	return rest[:dash], n, kind, true
}
