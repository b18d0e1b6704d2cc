package readmecheck

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/internal/fulltest"
)

// The README's Go snippets that use only the core module compile as pasted into
// a function body; the nested modules run the same check on theirs.
func TestREADME_EverySnippetCompilesInAFunctionBody(t *testing.T) {
	Check(t)
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
	msgs := compile(t, moduleDir, rootModule, "/x/README.md", snippets, false)
	require.Len(t, msgs, 2, "%q", msgs)
	assert.Contains(t, msgs[0], "README.md:10: declared and not used: sem")
	assert.Contains(t, msgs[0], "Go snippet from line 10, compiled in module .")
	assert.Contains(t, msgs[1], "README.md:24: undefined: notDeclared")
	assert.Contains(t, msgs[1], "Go snippet from line 20")
}

func TestCompile_ReportsVetFindingsOnceEverySnippetCompiles(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	moduleDir, _, err := findModule(wd)
	require.NoError(t, err)
	snippets := []assigned{
		{snippet{line: 40, code: "return nil\n"}, nil},
		{snippet{line: 50, code: "log.Printf(\"%d units\", \"two\")\n"}, []string{"log"}},
	}
	assert.Empty(t, compile(t, moduleDir, rootModule, "/x/README.md", snippets, false), "not vetted: the compiler finds nothing")
	fulltest.Long(t) // as Check vets only without -short
	msgs := compile(t, moduleDir, rootModule, "/x/README.md", snippets, true)
	require.Len(t, msgs, 1, "%q", msgs)
	assert.Contains(t, msgs[0], "README.md:50: ")
	assert.Contains(t, msgs[0], "wrong type")
}
