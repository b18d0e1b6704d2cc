package readmecheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
