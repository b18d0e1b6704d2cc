package main

import (
	"archive/zip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// zipNames returns the names in the zip file, less the module@version/ prefix
// every one of them must carry.
func zipNames(t *testing.T, name, prefix string) []string {
	t.Helper()
	r, err := zip.OpenReader(name)
	require.NoError(t, err)
	defer r.Close()
	var names []string
	for _, f := range r.File {
		rest, ok := strings.CutPrefix(f.Name, prefix)
		require.True(t, ok, "%s in %s", f.Name, name)
		names = append(names, rest)
	}
	slices.Sort(names)
	return names
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	return string(data)
}

func TestPublish_EachModuleIsWhatItsTagWouldRelease(t *testing.T) {
	root := writeTree(t, map[string]string{
		"go.mod":            coreGoMod,
		"LICENSE":           "the license",
		".gitignore":        "*.prof\n",
		"core.go":           "package semaphore\n",
		"deleted.go":        "package semaphore\n",
		"etcdsem/go.mod":    nested("etcdsem", "v0.1.0", true),
		"etcdsem/e.go":      "package etcdsem\n",
		"bench/x/go.mod":    nested("bench/x", "v0.1.0", true),
		"bench/x/main.go":   "package main\n",
		"testdata/a/go.mod": "module example.com/a\n",
	})
	gitInit(t, root)
	require.NoError(t, os.WriteFile(filepath.Join(root, "untracked.go"), []byte("package semaphore\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "cpu.prof"), []byte("ignored"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(root, "deleted.go")))
	mods, err := findModules(root)
	require.NoError(t, err)
	proxy := t.TempDir()

	require.NoError(t, publish(root, mods, "v0.2.0-ci", proxy))

	core := filepath.Join(proxy, "github.com/fairsem/semaphore/@v")
	assert.Equal(t, []string{".gitignore", "LICENSE", "core.go", "go.mod", "untracked.go"},
		zipNames(t, filepath.Join(core, "v0.2.0-ci.zip"), rootPath+"@v0.2.0-ci/"),
		"the files git would commit, without the nested modules' or the ignored ones")
	assert.Equal(t, coreGoMod, readFile(t, filepath.Join(core, "v0.2.0-ci.mod")))
	var info struct{ Version string }
	require.NoError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(core, "v0.2.0-ci.info"))), &info))
	assert.Equal(t, "v0.2.0-ci", info.Version)
	assert.Equal(t, "v0.2.0-ci\n", readFile(t, filepath.Join(core, "list")))

	etcd := filepath.Join(proxy, "github.com/fairsem/semaphore/etcdsem/@v")
	assert.Equal(t, []string{"LICENSE", "e.go", "go.mod"},
		zipNames(t, filepath.Join(etcd, "v0.2.0-ci.zip"), rootPath+"/etcdsem@v0.2.0-ci/"),
		"the root's LICENSE added to a nested module without one")
	assert.Equal(t, nested("etcdsem", "v0.2.0-ci", true), readFile(t, filepath.Join(etcd, "v0.2.0-ci.mod")),
		"the core required at the published version, the replace directive kept")
	assert.NoDirExists(t, filepath.Join(proxy, "github.com/fairsem/semaphore/bench"), "bench/x is not published")
	assert.Equal(t, nested("etcdsem", "v0.1.0", true), readFile(t, filepath.Join(root, "etcdsem/go.mod")), "the working tree unchanged")

	require.NoError(t, publish(root, mods, "v0.3.0-ci", proxy))
	require.NoError(t, publish(root, mods, "v0.3.0-ci", proxy))
	assert.Equal(t, "v0.2.0-ci\nv0.3.0-ci\n", readFile(t, filepath.Join(core, "list")), "each version listed once")
}

func TestPublish_RejectsAFileNoModuleMayHold(t *testing.T) {
	root := writeTree(t, map[string]string{
		"go.mod":    coreGoMod,
		"a\x7fb.go": "package semaphore\n",
	})
	gitInit(t, root)
	mods, err := findModules(root)
	require.NoError(t, err)

	err = publish(root, mods, "v0.2.0-ci", t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "publish "+rootPath+"@v0.2.0-ci")
}

func TestPublish_NeedsAGitWorkTree(t *testing.T) {
	root := writeTree(t, map[string]string{"go.mod": coreGoMod})
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(root))
	mods, err := findModules(root)
	require.NoError(t, err)

	err = publish(root, mods, "v0.2.0-ci", t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "list the files of the working tree in "+root)
}
