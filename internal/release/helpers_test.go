package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeTree writes files (slash-separated name to content) under a new
// temporary directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return root
}

// gitInit makes root a git work tree with every file of it tracked.
func gitInit(t *testing.T, root string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
}

// nested is the go.mod of a nested module in dir requiring the core at version,
// with a replace directive to it when replace is set.
func nested(dir, version string, replace bool) string {
	s := "module " + rootPath + "/" + dir + "\n\ngo 1.25\n\nrequire " + rootPath + " " + version + "\n"
	if replace {
		s += "\nreplace " + rootPath + " => " + relativeDir(dir, ".") + "\n"
	}
	return s
}

const coreGoMod = "module " + rootPath + "\n\ngo 1.25\n"

// modulesOf reads the modules of the tree made of files.
func modulesOf(t *testing.T, files map[string]string) []repoModule {
	t.Helper()
	mods, err := findModules(writeTree(t, files))
	require.NoError(t, err)
	return mods
}
