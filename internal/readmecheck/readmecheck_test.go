package readmecheck

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's Go snippets that use only the core module compile as pasted into
// a function body; the nested modules run the same check on theirs.
func TestREADME_EverySnippetCompilesInAFunctionBody(t *testing.T) {
	Check(t)
}

func TestParseSnippets_GoBlocksOnlyWithTheirFirstLine(t *testing.T) {
	readme := "# title\n" + // 1
		"```go\n" + // 2
		"a := 1\n" + // 3
		"\n" + // 4
		"```\n" + // 5
		"```\n" + // 6
		"go get x\n" + // 7
		"```\n" + // 8
		"  ```go title\n" + // 9
		"b()\n" + // 10
		"  ```\n" // 11
	got, err := parseSnippets([]byte(readme))
	require.NoError(t, err)
	assert.Equal(t, []snippet{{line: 3, code: "a := 1\n\n"}, {line: 10, code: "b()\n"}}, got)
}

func TestParseSnippets_UnclosedBlockIsAnError(t *testing.T) {
	_, err := parseSnippets([]byte("text\n```go\na := 1\n"))
	assert.ErrorContains(t, err, "README.md:2: code block never closed")
}

func TestSelectedPackages_CountsSelectorsNotCommentsStringsOrFields(t *testing.T) {
	code := `c := prom.NewSemaphoreCollector() // or otel.NewSemaphoreMetrics(meter)
s := "etcdsem.New"
st.Members[0].group.x = semaphore.MaxUnits
var _ = p.context
`
	assert.Equal(t, []string{"prom", "semaphore"}, selectedPackages(code))
}

func TestModuleOf_NestedModulePackagesDecide(t *testing.T) {
	for _, tc := range []struct {
		names  []string
		module string
		ok     bool
	}{
		{nil, ".", true},
		{[]string{"context", "semaphore", "admission"}, ".", true},
		{[]string{"etcdsem", "context"}, "etcdsem", true},
		{[]string{"prom", "prometheus", "semaphore"}, "metrics/prom", true},
		{[]string{"otel", "metric"}, "metrics/otel", true},
		{[]string{"prom", "otel"}, "metrics/otel and metrics/prom", false},
	} {
		m, ok := moduleOf(tc.names)
		assert.Equal(t, tc.module, m, "%v", tc.names)
		assert.Equal(t, tc.ok, ok, "%v", tc.names)
	}
}

func TestCompile_ReportsEachErrorAtItsReadmeLine(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	moduleDir, _, err := findModule(wd)
	require.NoError(t, err)
	snippets := []assigned{
		{snippet{line: 10, code: "sem := semaphore.New(1)\n"}, []string{"semaphore"}},
		{snippet{line: 20, code: "u, err := sem.AcquireUnits(ctx, 1)\nif err != nil {\n\treturn err\n}\nnotDeclared(u)\n"}, nil},
		{snippet{line: 30, code: "log.Print(ctx)\nreturn nil\n"}, []string{"log"}},
	}
	msgs := compile(t, moduleDir, rootModule, "/x/README.md", snippets)
	require.Len(t, msgs, 2, "%q", msgs)
	assert.Contains(t, msgs[0], "README.md:10: declared and not used: sem")
	assert.Contains(t, msgs[0], "Go snippet from line 10, compiled in module .")
	assert.Contains(t, msgs[1], "README.md:24: undefined: notDeclared")
	assert.Contains(t, msgs[1], "Go snippet from line 20")
}
