package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFindModules_CoreFirstThenNestedByDirectory(t *testing.T) {
	mods := modulesOf(t, map[string]string{
		"go.mod":              coreGoMod,
		"zeta/go.mod":         "module " + rootPath + "/zeta\n",
		"metrics/prom/go.mod": "module " + rootPath + "/metrics/prom\n",
		"alpha/go.mod":        "module " + rootPath + "/alpha\n",
	})
	var dirs []string
	for _, m := range mods {
		dirs = append(dirs, m.Dir)
	}
	assert.Equal(t, []string{".", "alpha", "metrics/prom", "zeta"}, dirs)
	assert.Equal(t, rootPath+"/metrics/prom", mods[2].Path)
}

func TestFindModules_SkipsWhatTheGoCommandSkips(t *testing.T) {
	mods := modulesOf(t, map[string]string{
		"go.mod":                coreGoMod,
		"testdata/x/go.mod":     "module example.com/x\n",
		"a/testdata/y/go.mod":   "module example.com/y\n",
		"_readmecheck1/go.mod":  "module example.com/z\n",
		".hidden/go.mod":        "module example.com/h\n",
		"vendor/example/go.mod": "module example.com/v\n",
	})
	require.Len(t, mods, 1)
	assert.Equal(t, ".", mods[0].Dir)
}

func TestFindModules_ModulePathMustMatchItsDirectory(t *testing.T) {
	root := writeTree(t, map[string]string{
		"go.mod":         coreGoMod,
		"etcdsem/go.mod": "module " + rootPath + "/etcd\n",
	})
	_, err := findModules(root)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "etcdsem/go.mod: module "+rootPath+"/etcd, but go get finds the module in etcdsem only as "+rootPath+"/etcdsem")
}

func TestFindModules_NeedsTheCore(t *testing.T) {
	root := writeTree(t, map[string]string{"etcdsem/go.mod": "module " + rootPath + "/etcdsem\n"})
	_, err := findModules(root)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no go.mod of module "+rootPath)
}

func TestPublished_BenchInternalAndBrowserTestAreNot(t *testing.T) {
	for dir, want := range map[string]bool{
		".":                    true,
		"etcdsem":              true,
		"amqpsem":              true,
		"metrics/prom":         true,
		"bench/adaptive":       false,
		"bench/keyed":          false,
		"internal/release":     false,
		"semdebug/browsertest": false,
		"semdebug":             true,
		"benchmarks":           true,
	} {
		assert.Equal(t, want, repoModule{Dir: dir}.Published(), dir)
	}
}

func TestTag_NestedModuleTagCarriesItsDirectory(t *testing.T) {
	assert.Equal(t, "v0.1.0", repoModule{Dir: "."}.Tag("v0.1.0"))
	assert.Equal(t, "etcdsem/v0.1.0", repoModule{Dir: "etcdsem"}.Tag("v0.1.0"))
	assert.Equal(t, "metrics/prom/v1.2.3-rc.1", repoModule{Dir: "metrics/prom"}.Tag("v1.2.3-rc.1"))
}
