// Package fuzzprog reads a fuzz input as a program, for the model-based fuzz
// tests: one byte at a time, then zeros once the input runs out.
package fuzzprog

// Reader hands out a program's bytes.
type Reader struct {
	b []byte
	i int
}

// New returns a Reader over b.
func New(b []byte) *Reader { return &Reader{b: b} }

// More reports whether any byte is left.
func (r *Reader) More() bool { return r.i < len(r.b) }

// Byte returns the next byte, or 0 past the end.
func (r *Reader) Byte() byte {
	if r.i >= len(r.b) {
		return 0
	}
	r.i++
	return r.b[r.i-1]
}
