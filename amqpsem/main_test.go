package amqpsem

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairsem/semaphore/amqpsem/amqptest"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(holderChildEnv); spec != "" {
		os.Exit(runHolderChild(spec))
	}
	code := m.Run()
	for _, b := range brokers.stop() {
		b.Stop()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// brokers are the nodes this test binary started; TestMain stops them, so
// that no test run leaves a broker behind (and each dies with the binary if
// it is killed: see amqptest).
var brokers brokerSet

type brokerSet struct {
	mu   sync.Mutex
	list []*amqptest.Broker
}

func (s *brokerSet) add(b *amqptest.Broker) {
	s.mu.Lock()
	s.list = append(s.list, b)
	s.mu.Unlock()
}

func (s *brokerSet) stop() []*amqptest.Broker {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.list
	s.list = nil
	return l
}

var (
	sharedOnce   sync.Once
	sharedBroker *amqptest.Broker
	sharedErr    error
	sharedDir    string
)

// requireRabbitMQ skips the test when rabbitmq-server is not installed, or
// fails it when CI=true: CI installs it.
func requireRabbitMQ(t testing.TB) {
	t.Helper()
	if _, err := amqptest.Server(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %v", err)
		}
		t.Skipf("skipped: %v", err)
	}
}

// broker returns the node shared by the package's tests (each uses its own
// semaphore names), started on first use with the event exchange.
func broker(t testing.TB) *amqptest.Broker {
	t.Helper()
	requireRabbitMQ(t)
	sharedOnce.Do(func() {
		sharedDir, sharedErr = os.MkdirTemp("", "amqpsem-test-")
		if sharedErr != nil {
			return
		}
		sharedBroker, sharedErr = amqptest.Start(amqptest.Options{Dir: sharedDir, Plugins: []string{"rabbitmq_event_exchange"},
			Users: []amqptest.User{readOnlyUser}})
		if sharedErr == nil {
			brokers.add(sharedBroker)
		}
	})
	require.NoError(t, sharedErr)
	return sharedBroker
}

// SharedBrokerURL returns the URL of the broker the package's tests share,
// starting it if needed: for the examples' test, in package amqpsem_test.
func SharedBrokerURL(t testing.TB) string {
	t.Helper()
	return broker(t).URL
}

// readOnlyUser, of the shared broker, may not configure (declare) anything.
var readOnlyUser = amqptest.User{Name: "amqpsem-ro", Password: "ro", Configure: "^$", Write: ".*", Read: ".*"}

// ctl runs rabbitmqctl against b with a bound of its own: the command starts
// an Erlang VM, which takes seconds, and a minute on two busy cores.
func ctl(t testing.TB, b *amqptest.Broker, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := b.Ctl(ctx, args...)
	require.NoError(t, err)
}

// ownBroker starts a node for one test, stopped when it ends.
func ownBroker(t testing.TB, plugins ...string) *amqptest.Broker {
	t.Helper()
	requireRabbitMQ(t)
	b, err := amqptest.Start(amqptest.Options{Dir: t.TempDir(), Plugins: plugins})
	require.NoError(t, err)
	brokers.add(b)
	t.Cleanup(b.Stop)
	return b
}

// newSem returns a handle closed when the test ends.
func newSem(t testing.TB, url, name string, opts ...Option) *Semaphore {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := New(ctx, url, name, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// testName returns a semaphore name unique to the test and this run of it.
func testName(t testing.TB) string {
	t.Helper()
	if n, ok := testNames.Load(t); ok {
		return n.(string)
	}
	n := fmt.Sprintf("test.%s.%d.%d", strings.ReplaceAll(t.Name(), "/", "."), os.Getpid(), testRuns.Add(1))
	testNames.Store(t, n)
	return n
}

var (
	testRuns  atomic.Int64
	testNames sync.Map
)

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
