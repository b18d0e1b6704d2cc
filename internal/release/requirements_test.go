package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckRequirements_ReturnsTheOneVersion(t *testing.T) {
	mods := modulesOf(t, map[string]string{
		"go.mod":              coreGoMod,
		"etcdsem/go.mod":      nested("etcdsem", "v0.3.1", true),
		"metrics/prom/go.mod": nested("metrics/prom", "v0.3.1", true),
		"bench/x/go.mod":      nested("bench/x", "v0.3.1", true),
	})
	v, err := checkRequirements(mods)
	require.NoError(t, err)
	assert.Equal(t, "v0.3.1", v)
}

func TestCheckRequirements_NoRequirementNoVersion(t *testing.T) {
	mods := modulesOf(t, map[string]string{
		"go.mod":               coreGoMod,
		"semdebug/bt/go.mod":   "module " + rootPath + "/semdebug/bt\n",
		"semdebug/bt2/go.mod":  "module " + rootPath + "/semdebug/bt2\n\nreplace " + rootPath + " => ../..\n",
		"other/go.mod":         "module " + rootPath + "/other\n\nrequire example.com/x v1.0.0\n",
		"other/deeper/go.mod":  "module " + rootPath + "/other/deeper\n",
		"other/deeper/x/x.txt": "",
	})
	v, err := checkRequirements(mods)
	require.NoError(t, err)
	assert.Empty(t, v)
}

func TestCheckRequirements_PlaceholderVersionsFail(t *testing.T) {
	for _, v := range []string{"v0.0.0", "v0.0.0-00010101000000-000000000000", "v0.1.1-0.20260101000000-abcdefabcdef"} {
		mods := modulesOf(t, map[string]string{
			"go.mod":         coreGoMod,
			"etcdsem/go.mod": nested("etcdsem", v, true),
		})
		_, err := checkRequirements(mods)
		require.Error(t, err, v)
		assert.Contains(t, err.Error(), "etcdsem/go.mod: requires "+rootPath+" at "+v+", which is not a release version", v)
	}
}

func TestCheckRequirements_OneVersionForTheRepository(t *testing.T) {
	mods := modulesOf(t, map[string]string{
		"go.mod":         coreGoMod,
		"etcdsem/go.mod": nested("etcdsem", "v0.1.0", true),
		"grpcsem/go.mod": nested("grpcsem", "v0.2.0", true),
	})
	_, err := checkRequirements(mods)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "grpcsem/go.mod: requires "+rootPath+" at v0.2.0, but etcdsem/go.mod requires the repository's modules at v0.1.0")
}

func TestCheckRequirements_ReplaceBesideEveryRequirement(t *testing.T) {
	mods := modulesOf(t, map[string]string{
		"go.mod":              coreGoMod,
		"metrics/prom/go.mod": nested("metrics/prom", "v0.1.0", false),
		"grpcsem/go.mod":      "module " + rootPath + "/grpcsem\n\nrequire " + rootPath + " v0.1.0\n\nreplace " + rootPath + " => ../../elsewhere\n",
		"etcdsem/go.mod":      "module " + rootPath + "/etcdsem\n\nrequire " + rootPath + " v0.1.0\n\nreplace " + rootPath + " v0.1.0 => ../\n",
	})
	_, err := checkRequirements(mods)
	require.Error(t, err)
	for _, name := range []string{"metrics/prom/go.mod", "grpcsem/go.mod", "etcdsem/go.mod"} {
		assert.Contains(t, err.Error(), name+": requires "+rootPath+" without the directive \"replace "+rootPath+" => "+relativeDir(name[:len(name)-len("/go.mod")], ".")+"\"")
	}
}

func TestCheckRequirements_PublishedModuleRequiresOnlyPublishedOnes(t *testing.T) {
	mods := modulesOf(t, map[string]string{
		"go.mod":                coreGoMod,
		"bench/adaptive/go.mod": nested("bench/adaptive", "v0.1.0", true),
		"etcdsem/go.mod": "module " + rootPath + "/etcdsem\n\nrequire " + rootPath + "/bench/adaptive v0.1.0\n\nreplace " +
			rootPath + "/bench/adaptive => ../bench/adaptive\n",
	})
	_, err := checkRequirements(mods)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "etcdsem/go.mod: requires "+rootPath+"/bench/adaptive, which is not published")
}

func TestRelativeDir_AsAReplaceDirectiveNamesIt(t *testing.T) {
	assert.Equal(t, "..", relativeDir("etcdsem", "."))
	assert.Equal(t, "../..", relativeDir("metrics/prom", "."))
	assert.Equal(t, "../../grpcsem", relativeDir("metrics/prom", "grpcsem"))
	assert.Equal(t, "./etcdsem", relativeDir(".", "etcdsem"))
}

func TestWithRequirements_SetsEveryRepositoryRequirementAndKeepsTheRest(t *testing.T) {
	gomod := `module ` + rootPath + `/grpcsem

// a comment that stays
go 1.26.0

replace ` + rootPath + ` => ../

require (
	` + rootPath + ` v0.1.0 // the core
	` + rootPath + `/etcdsem v0.1.0
	google.golang.org/grpc v1.85.0
)
`
	mods := modulesOf(t, map[string]string{
		"go.mod":         coreGoMod,
		"etcdsem/go.mod": nested("etcdsem", "v0.1.0", true),
		"grpcsem/go.mod": gomod,
	})
	got, changed, err := withRequirements(mods[2], mods, "v0.2.0")
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, `module `+rootPath+`/grpcsem

// a comment that stays
go 1.26.0

replace `+rootPath+` => ../

require (
	`+rootPath+` v0.2.0 // the core
	`+rootPath+`/etcdsem v0.2.0
	google.golang.org/grpc v1.85.0
)
`, string(got))

	_, changed, err = withRequirements(mods[2], mods, "v0.1.0")
	require.NoError(t, err)
	assert.False(t, changed, "already at the version")
	_, changed, err = withRequirements(mods[0], mods, "v0.2.0")
	require.NoError(t, err)
	assert.False(t, changed, "the core requires no module of the repository")
}
