package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairsem/semaphore/amqpsem"
	"github.com/fairsem/semaphore/amqpsem/amqptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

var (
	brokerOnce sync.Once
	testBroker *amqptest.Broker
	brokerErr  error
	brokerDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if testBroker != nil {
		testBroker.Stop()
		os.RemoveAll(brokerDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// brokerURL returns the URL of the node this test binary starts once; the
// test skips without rabbitmq-server unless CI=true.
func brokerURL(t *testing.T) string {
	t.Helper()
	if _, err := amqptest.Server(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %v", err)
		}
		t.Skipf("skipped: %v", err)
	}
	brokerOnce.Do(func() {
		if brokerDir, brokerErr = os.MkdirTemp("", "amqpsemctl-test-"); brokerErr == nil {
			testBroker, brokerErr = amqptest.Start(amqptest.Options{Dir: brokerDir})
		}
	})
	require.NoError(t, brokerErr)
	return testBroker.URL
}

// ctl runs the command and returns its exit status, stdout and stderr.
func ctl(args ...string) (int, string, string) {
	var out, errOut strings.Builder
	code := runMain(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// Every argument is checked before connecting: each mistake is one line on
// stderr and exit status 1, with no broker anywhere.
func TestCtl_BadArgumentsAreOneLineAndStatus1(t *testing.T) {
	long := strings.Repeat("n", 5000)
	cases := map[string][]string{
		"-url is required":               {"status", "jobs"},
		"missing command":                {"-url", "amqp://x/"},
		`unknown command "grow"`:         {"-url", "amqp://x/", "grow", "jobs", "1"},
		"add: want NAME N, got 1":        {"-url", "amqp://x/", "add", "jobs"},
		`"-1" is not a number of slots`:  {"-url", "amqp://x/", "resize", "jobs", "-1"},
		`"1000001" is not a number`:      {"-url", "amqp://x/", "create", "jobs", "1000001"},
		`wait: "0" is not a slot`:        {"-url", "amqp://x/", "wait", "jobs", "1,0"},
		"(5000 bytes)":                   {"-url", "amqp://x/", "status", long},
		"control character U+000A":       {"-url", "amqp://x/", "status", "a\nb"},
		`reserved prefix "amq."`:         {"-url", "amqp://x/", "destroy", "amq.x"},
		"another semaphore's slot queue": {"-url", "amqp://x/", "status", "jobs-1-A"},
		"-timeout 0s: must be positive":  {"-url", "amqp://x/", "-timeout", "0", "status", "jobs"},
	}
	for want, args := range cases {
		code, out, errOut := ctl(args...)
		assert.Equal(t, 1, code, want)
		assert.Empty(t, out, want)
		assert.Contains(t, errOut, want)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
		assert.Less(t, len(errOut), 500, want)
	}
	code, out, _ := ctl("-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "usage: amqpsemctl -url URL")
}

// The operator's round: create, status while a client holds slots, remove
// (the holders keep theirs), wait for them, add, resize and destroy, against
// a real broker.
func TestCtl_AdministersASemaphoreAgainstABroker(t *testing.T) {
	url := brokerURL(t)
	name := fmt.Sprintf("ctl.%d", time.Now().UnixNano())
	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := ctl(append([]string{"-url", url}, args...)...)
		require.Equal(t, 0, code, "amqpsemctl %v: %s", args, errOut)
		return out
	}
	q := strconv.Quote(name)
	assert.Equal(t, q+": created with 3 slots\n", run("create", name, "3"))
	code, _, errOut := ctl("-url", url, "create", name, "2")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "already has 3 slots")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := amqpsem.New(ctx, url, name)
	require.NoError(t, err)
	defer s.Close()
	u, err := s.Acquire(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, q+": 3 slots, 2 held\nheld:  1,2\nfree:  3\n", run("status", name))

	assert.Equal(t, q+": 1 slot; removed 3,2 (holders keep them until they release: amqpsemctl -url URL wait '"+name+"' 3,2)\n",
		run("remove", name, "2"))
	assert.Equal(t, q+": 1 slot, 1 held\nheld:  1\nfree:  none\nremoved but still held: 2\n", run("status", name))
	code, _, errOut = ctl("-url", url, "-timeout", "300ms", "wait", name, "3,2")
	assert.Equal(t, 1, code, "the holder still holds slot 2")
	assert.Contains(t, errOut, "slots 2 still held")
	done := make(chan string, 1)
	go func() {
		_, out, errOut := ctl("-url", url, "-timeout", "30s", "wait", name, "2")
		done <- out + errOut
	}()
	require.NoError(t, u.Return(ctx, 1))
	assert.Equal(t, q+": no client holds slots 2\n", <-done)

	assert.Equal(t, q+": 3 slots\n", run("add", name, "2"))
	assert.Equal(t, q+": 2 slots; removed 3 (holders keep them until they release: amqpsemctl -url URL wait '"+name+"' 3)\n", run("resize", name, "2"))
	assert.Equal(t, q+": 0 slots; removed 2,1 (holders keep them until they release: amqpsemctl -url URL wait '"+name+"' 2,1)\n", run("destroy", name))
	require.NoError(t, u.Release(ctx))
	assert.Equal(t, q+": 0 slots, 0 held\nheld:  none\nfree:  none\n", run("status", name))
}

// Names that are valid but hostile (markup, quotes, a shell's metacharacters,
// the longest allowed) are printed quoted, on the lines they belong to.
func TestCtl_StatusQuotesHostileNames(t *testing.T) {
	url := brokerURL(t)
	suffix := strconv.FormatInt(time.Now().UnixNano(), 10)
	for _, name := range []string{
		`<b>jobs</b> "x" & é ` + suffix,
		"$(rm -rf ~) 'it''s' `x` " + suffix,
		strings.Repeat("z", amqpsem.MaxNameLen-len(suffix)) + suffix,
	} {
		code, out, errOut := ctl("-url", url, "create", name, "1")
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, strconv.Quote(name)+": created with 1 slot\n", out)
		_, out, _ = ctl("-url", url, "status", name)
		assert.Equal(t, strconv.Quote(name)+": 1 slot, 0 held\nheld:  none\nfree:  1\n", out)
		_, out, _ = ctl("-url", url, "destroy", name)
		assert.True(t, strings.HasPrefix(out, strconv.Quote(name)+": 0 slots; removed 1"), out)
		assert.Equal(t, 1, strings.Count(out, "\n"))
	}
}
