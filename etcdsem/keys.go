package etcdsem

import (
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The key layout. Every key of the semaphore NAME starts with
//
//	P = escape(NAME) + "/"
//
// where escape writes each "%" as "%25" and each "/" as "%2F" and leaves every
// other byte as it is (so "jobs" has the prefix "jobs/", and "app/jobs" has
// "app%2Fjobs/"). Under P: "cap", "broken", "q/<lease>-<seq>" (lease: 16 hex
// digits; seq: hex) and "r/<lease>", described in the package doc.
//
// Why no key of one semaphore can be taken for a key of another, whatever
// bytes the names hold: escape(NAME) contains no "/", so the first "/" of any
// key of NAME is the last byte of P, at offset len(escape(NAME)). If a key of
// B started with A's prefix, its first "/" would be at offset
// len(escape(A)) as well, so escape(A) = escape(B); escape is one-to-one (a
// "%" in its output always starts one of the two escapes, since a "%" of the
// name is itself escaped), so A = B. Hence a range or watch over P sees the
// keys of NAME and of no other semaphore (no name is a prefix of another's
// keys: not "a" of "a/b", nor "a" of "a/q/...", nor "a/q" of "a%2Fq"). Under
// P, "cap" and "broken" are whole keys and neither is a prefix of the other or
// of "q/", and the lease part of a queue key has a fixed width followed by
// "-", so one lease's keys never start with another lease's prefix.
//
// The state, the keys the grant rule reads, is the range [P, P+"r/"): every
// key k in it starts with P (if k did not, at the first byte where k and P
// differ k's byte would be greater, as k >= P, and so k > P+"r/"), so it holds
// no other semaphore's keys; and it holds "broken", "cap" and "q/..." (each
// below "r/") but no report, "r/..." being at or after its end. Watches and
// reads of the state use that range, so a report written reaches no handle's
// watch.
type keyLayout struct {
	prefix    string // P: every key of the semaphore, and no other's
	qprefix   string // P + "q/": one key per acquire, waiting or holding
	capKey    string // P + "cap": the capacity, zero-padded so values compare as numbers
	brokenKey string // P + "broken": present while broken; the value is the reason
	rprefix   string // P + "r/": one report per block-mode handle; the end of the state's range
}

// keysOf returns the key layout of the semaphore name.
func keysOf(name string) keyLayout {
	p := KeyPrefix(name)
	return keyLayout{prefix: p, qprefix: p + "q/", capKey: p + "cap", brokenKey: p + "broken", rprefix: ReportPrefix(name)}
}

// setPrefix returns the prefix of every key of the Set name: KeyPrefix(name)
// + "k/". A single semaphore of the same name has no key under it ("k/" is
// none of "cap", "broken", "q/", "r/"), and its grant rule and watch read
// only its own keys, so the two are independent.
func setPrefix(name string) string { return KeyPrefix(name) + "k/" }

// setKeysOf returns the key layout of key's semaphore in the Set whose prefix
// is sp: sp + escape(key) + "/", laid out as a semaphore's. By the argument
// above, with sp in place of nothing: escape(key) holds no "/", so the first
// "/" after sp ends the key's prefix, and distinct keys have prefixes neither
// of which starts with the other.
func setKeysOf(sp, key string) keyLayout {
	p := sp + nameEscaper.Replace(key) + "/"
	return keyLayout{prefix: p, qprefix: p + "q/", capKey: p + "cap", brokenKey: p + "broken", rprefix: p + "r/"}
}

// stateRange is the option of a watch or read of the state, from prefix: the
// range up to the reports.
func (k keyLayout) stateRange() clientv3.OpOption { return clientv3.WithRange(k.rprefix) }

// reportKey is the key of the report of the handle on lease.
func (k keyLayout) reportKey(lease clientv3.LeaseID) string {
	return k.rprefix + fmt.Sprintf("%016x", int64(lease))
}

// MaxNameLen is the longest name New accepts, in bytes as its keys hold it:
// escaped, so len(KeyPrefix(name))-1, where each "%" and "/" takes three
// bytes. The bound is etcd's: a server refuses a request above 1.5 MiB (its
// default --max-request-bytes), and the longest request of a semaphore, the
// acquire transaction, holds the escaped name seven times (its queue key three
// times, the capacity and broken keys twice each), so that etcd refuses it
// from about 224,600 bytes of escaped name on. The bound is set below that,
// leaving room for the label of WithClientName, which the transaction holds
// once.
const MaxNameLen = 200 << 10

var nameEscaper = strings.NewReplacer("%", "%25", "/", "%2F")

// KeyPrefix returns the prefix of every key of the semaphore name and of no
// other semaphore's keys: the name with each "%" written as "%25" and each "/"
// as "%2F", then "/". It is for operators' tools (etcdctl get --prefix) and
// watches.
func KeyPrefix(name string) string {
	return nameEscaper.Replace(name) + "/"
}

// ReportPrefix returns the prefix of the reports of the semaphore name's
// block-mode handles: KeyPrefix(name) + "r/", the last keys under it. The
// semaphore's state (capacity, broken, queue) is the range from KeyPrefix(name)
// up to ReportPrefix(name), which a tool watches to follow grants without
// seeing reports (etcdctl watch KEY RANGE_END).
func ReportPrefix(name string) string {
	return KeyPrefix(name) + "r/"
}
