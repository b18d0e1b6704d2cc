package amqpsem_test

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fairsem/semaphore/amqpsem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// brokerURL is the broker the examples run against: a local RabbitMQ
// (apt-get install rabbitmq-server) by default. They need one, so go test
// compiles them without running them; TestExamples runs them against a node
// the tests start and checks what they print.
var brokerURL = "amqp://guest:guest@127.0.0.1:5672/"

// Two handles share a semaphore of 2 slots, as two processes would: the second
// waits for a slot until the first gives one back.
func Example() {
	ctx := context.Background()
	name := fmt.Sprintf("example.jobs.%d", time.Now().UnixNano())
	a, err := amqpsem.New(ctx, brokerURL, name, amqpsem.WithSlots(2))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	b, err := amqpsem.New(ctx, brokerURL, name)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()

	u, _ := a.Acquire(ctx, 2)
	fmt.Println("a holds slots", u.Slots())
	_, ok, _ := b.TryAcquire(ctx, 1)
	fmt.Println("b can take a slot at once:", ok)

	got := make(chan *amqpsem.Units)
	go func() {
		v, _ := b.Acquire(ctx, 1) // woken when a gives a slot back
		got <- v
	}()
	_ = u.Return(ctx, 1) // the highest slot goes back
	v := <-got
	fmt.Println("b holds slots", v.Slots(), "and a keeps", u.Slots())
	_ = v.Release(ctx)
	_ = u.Release(ctx)
	_, _ = a.Destroy(ctx)
	// Prints:
	// a holds slots [1 2]
	// b can take a slot at once: false
	// b holds slots [2] and a keeps [1]
}

// WithSemaphore runs a function holding a slot, with a context cancelled if
// the slot is lost (the holder's connection cut off from the broker), and
// gives the slot back when the function returns.
func ExampleWithSemaphore() {
	ctx := context.Background()
	name := fmt.Sprintf("example.migrations.%d", time.Now().UnixNano())
	s, err := amqpsem.New(ctx, brokerURL, name, amqpsem.WithSlots(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	err = amqpsem.WithSemaphore(ctx, s, 1, func(ctx context.Context) error {
		st, _ := s.Stats(ctx)
		fmt.Println("migrating with slot", st.Mine)
		return ctx.Err() // nil unless the slot was lost (context.Cause(ctx) says why)
	})
	fmt.Println("done:", err)
	st, _ := s.Stats(ctx)
	fmt.Println("slots held afterwards:", len(st.Holders))
	_, _ = s.Destroy(ctx)
	// Prints:
	// migrating with slot [1]
	// done: <nil>
	// slots held afterwards: 0
}

// Removing a slot never revokes its holder: the holder learns of it when it
// verifies, and the administrator waits until the holder gives it back.
func ExampleSemaphore_RemoveSlots() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := fmt.Sprintf("example.pool.%d", time.Now().UnixNano())
	s, err := amqpsem.New(ctx, brokerURL, name, amqpsem.WithSlots(3))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	u, _ := s.Acquire(ctx, 3)

	removed, _ := s.RemoveSlots(ctx, 1)
	fmt.Println("removed", removed, "while held; the holder still holds", u.Count())
	err = u.Verify(ctx)
	fmt.Println("verify:", errors.Is(err, amqpsem.ErrSlotRemoved))
	_ = u.Return(ctx, 1) // gives back the highest: the removed one
	fmt.Println("waited:", s.WaitReleased(ctx, removed))
	n, _ := s.Slots(ctx)
	fmt.Println("slots now:", n, "held:", u.Slots())
	_ = u.Release(ctx)
	_, _ = s.Destroy(ctx)
	// Prints:
	// removed [3] while held; the holder still holds 3
	// verify: true
	// waited: <nil>
	// slots now: 2 held: [1 2]
}

// TestExamples runs each example against a broker the tests start and checks
// that it prints what its "Prints:" comment says.
func TestExamples(t *testing.T) {
	brokerURL = amqpsem.SharedBrokerURL(t)
	examples := map[string]func(){
		"Example":                      Example,
		"ExampleWithSemaphore":         ExampleWithSemaphore,
		"ExampleSemaphore_RemoveSlots": ExampleSemaphore_RemoveSlots,
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example_test.go", nil, parser.ParseComments)
	require.NoError(t, err)
	seen := 0
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || !strings.HasPrefix(fn.Name.Name, "Example") {
			continue
		}
		run, ok := examples[fn.Name.Name]
		require.True(t, ok, "%s is not run by TestExamples", fn.Name.Name)
		seen++
		var want string
		for _, cg := range f.Comments {
			if cg.Pos() > fn.Body.Lbrace && cg.End() < fn.Body.Rbrace && strings.HasPrefix(cg.Text(), "Prints:\n") {
				want = strings.TrimPrefix(cg.Text(), "Prints:\n")
			}
		}
		require.NotEmpty(t, want, "%s has no Prints: comment", fn.Name.Name)
		assert.Equal(t, want, stdoutOf(t, run), fn.Name.Name)
	}
	assert.Equal(t, len(examples), seen)
}

// stdoutOf returns what fn prints on os.Stdout.
func stdoutOf(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = w
	read := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		read <- string(b)
	}()
	defer func() { os.Stdout = stdout }()
	fn()
	os.Stdout = stdout
	w.Close()
	return <-read
}
