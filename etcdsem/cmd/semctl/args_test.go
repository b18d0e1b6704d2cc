package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every bad argument is refused before semctl connects anywhere, with one line
// on stderr that says what is wrong, nothing on stdout, and exit status 1.
func TestSemctl_BadArgumentsExitOneWithOneLine(t *testing.T) {
	const ep = "http://127.0.0.1:1" // nothing listens: a connection attempt would fail, not refuse
	cases := []struct {
		args []string
		want string // in the message
	}{
		{[]string{"-endpoints", ep, "resize", "", "3"}, "name is empty"},
		{[]string{"-endpoints", ep, "status", ""}, "name is empty"},
		{[]string{"-endpoints", ep, "break", "", "why"}, "name is empty"},
		{[]string{"-endpoints", ep, "resize", "x", "three"}, `"three" is not an integer`},
		{[]string{"-endpoints", ep, "resize", "x", "-1"}, "out of range"},
		{[]string{"-endpoints", ep, "resize", "x", "17592186044416"}, "out of range"},
		{[]string{"-endpoints", ep, "resize", "x", "99999999999999999999"}, "out of range"},
		{[]string{"-endpoints", ep, "resize", "x", "1.5"}, "not an integer"},
		{[]string{"-endpoints", ep, "resize", "x"}, "resize: want NAME N"},
		{[]string{"-endpoints", ep, "resize"}, "resize: want NAME N"},
		{[]string{"-endpoints", ep, "resize", "x", "3", "4"}, "resize: want NAME N"},
		{[]string{"-endpoints", ep, "break", "x"}, "break: want NAME REASON"},
		{[]string{"-endpoints", ep, "break", "x", ""}, "reason is empty"},
		{[]string{"-endpoints", ep, "status"}, "status: want NAME"},
		{[]string{"-endpoints", ep, "status", "x", "y"}, "status: want NAME"},
		{[]string{"-endpoints", ep, "repair"}, "repair: want NAME"},
		{[]string{"-endpoints", ep, "watch"}, "watch: want NAME"},
		{[]string{"-endpoints", ep, "drain", "x", "y"}, "drain: want NAME"},
		{[]string{"-endpoints", ep}, "missing command"},
		{[]string{"-endpoints", ep, "frobnicate", "x"}, `unknown command "frobnicate"`},
		{[]string{"-endpoints", ep, "-timeout", "0s", "status", "x"}, "-timeout"},
		{[]string{"-endpoints", ep, "-for", "-1s", "watch", "x"}, "-for"},
		{[]string{"-endpoints", ep, "-bogus", "status", "x"}, "-bogus"},
		{[]string{"-endpoints", ep, "-timeout", "soon", "status", "x"}, "-timeout"},
		{[]string{"status", "x"}, "-endpoints is required"},
		{[]string{}, "missing command"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := runMain(context.Background(), c.args, &stdout, &stderr)
			assert.Equal(t, 1, code)
			assert.Empty(t, stdout.String())
			msg := stderr.String()
			assert.True(t, strings.HasPrefix(msg, "semctl: "), "starts with the command's name: %q", msg)
			assert.Equal(t, 1, strings.Count(msg, "\n"), "one line: %q", msg)
			assert.True(t, strings.HasSuffix(msg, "\n"))
			assert.Contains(t, msg, c.want)
		})
	}
}

func TestSemctl_HelpPrintsUsageAndExitsZero(t *testing.T) {
	var stdout, stderr strings.Builder
	assert.Equal(t, 0, runMain(context.Background(), []string{"-h"}, &stdout, &stderr))
	assert.Contains(t, stdout.String(), "usage: semctl")
	assert.Contains(t, stdout.String(), "resize NAME N")
	assert.Empty(t, stderr.String())
}
