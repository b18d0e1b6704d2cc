package etcdsem

// keyLayout is where a semaphore's keys live in etcd.
type keyLayout struct {
	prefix    string // every key of the semaphore, and no other's
	qprefix   string // prefix + "q/": one key per acquire, waiting or holding
	capKey    string // prefix + "cap": the capacity, zero-padded so values compare as numbers
	brokenKey string // prefix + "broken": present while broken; the value is the reason
}

// keysOf returns the key layout of the semaphore name.
func keysOf(name string) keyLayout {
	p := KeyPrefix(name)
	return keyLayout{prefix: p, qprefix: p + "q/", capKey: p + "cap", brokenKey: p + "broken"}
}

// KeyPrefix returns the prefix of every key of the semaphore name, for
// operators' tools (etcdctl get --prefix) and watches.
func KeyPrefix(name string) string {
	return name + "/"
}
