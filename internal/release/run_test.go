package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repo writes a repository of a core, a published and an unpublished module.
func repo(t *testing.T, version string) string {
	t.Helper()
	return writeTree(t, map[string]string{
		"go.mod":                coreGoMod,
		"etcdsem/go.mod":        nested("etcdsem", version, true),
		"bench/adaptive/go.mod": nested("bench/adaptive", version, true),
	})
}

func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(&out, args)
	return out.String(), err
}

func TestRun_ModulesSaysWhichArePublished(t *testing.T) {
	out, err := runCmd(t, "-root", repo(t, "v0.1.0"), "modules")
	require.NoError(t, err)
	assert.Equal(t, ". "+rootPath+" published\nbench/adaptive "+rootPath+"/bench/adaptive not-published\netcdsem "+rootPath+"/etcdsem published\n", out)
}

func TestRun_TagsArePublishedModulesOnly(t *testing.T) {
	out, err := runCmd(t, "-root", repo(t, "v0.1.0"), "tags", "v0.2.0")
	require.NoError(t, err)
	assert.Equal(t, "v0.2.0\netcdsem/v0.2.0\n", out)
}

func TestRun_CheckPrintsTheVersionOrFails(t *testing.T) {
	out, err := runCmd(t, "-root", repo(t, "v0.1.0"), "check")
	require.NoError(t, err)
	assert.Equal(t, "v0.1.0\n", out)

	_, err = runCmd(t, "-root", repo(t, "v0.0.0"), "check")
	require.Error(t, err)
}

func TestRun_SetversionRewritesEveryModuleAndNamesTheFiles(t *testing.T) {
	root := repo(t, "v0.0.0")
	out, err := runCmd(t, "-root", root, "setversion", "v0.2.0")
	require.NoError(t, err)
	assert.Equal(t, "bench/adaptive/go.mod\netcdsem/go.mod\n", out)
	data, err := os.ReadFile(filepath.Join(root, "etcdsem", "go.mod"))
	require.NoError(t, err)
	assert.Equal(t, nested("etcdsem", "v0.2.0", true), string(data))

	out, err = runCmd(t, "-root", root, "check")
	require.NoError(t, err)
	assert.Equal(t, "v0.2.0\n", out)
	out, err = runCmd(t, "-root", root, "setversion", "v0.2.0")
	require.NoError(t, err)
	assert.Empty(t, out, "nothing to change")
}

func TestRun_RejectsVersionsNoReleaseCanCarry(t *testing.T) {
	root := repo(t, "v0.1.0")
	for _, v := range []string{"v0.0.0", "v2.0.0", "1.0.0", "v1.0", "v0.1.1-0.20260101000000-abcdefabcdef", "latest"} {
		_, err := runCmd(t, "-root", root, "setversion", v)
		require.Error(t, err, v)
		assert.Contains(t, err.Error(), `version "`+v+`"`)
	}
}

func TestRun_UsageErrors(t *testing.T) {
	root := repo(t, "v0.1.0")
	for _, args := range [][]string{{}, {"-root", root}, {"-root", root, "publish", "v0.1.0"}, {"-root", root, "tag", "v0.1.0"}, {"-nosuchflag", "modules"}} {
		_, err := runCmd(t, args...)
		require.ErrorIs(t, err, errUsage, "%q", args)
	}
}

func TestRun_FindsTheRootAboveTheWorkingDirectory(t *testing.T) {
	root := repo(t, "v0.1.0")
	t.Chdir(filepath.Join(root, "etcdsem"))
	out, err := runCmd(t, "tags", "v0.2.0")
	require.NoError(t, err)
	assert.Equal(t, "v0.2.0\netcdsem/v0.2.0\n", out)
}
