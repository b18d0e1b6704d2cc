package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
)

// rootPath is the module path of the repository's root module, the core.
const rootPath = "github.com/fairsem/semaphore"

// A repoModule is one module of the repository: a directory holding a go.mod.
type repoModule struct {
	Dir  string        // slash-separated, relative to the repository's root; "." for the core
	Path string        // the module path: rootPath, then "/" and Dir for a nested module
	File *modfile.File // its go.mod as read
}

// Published reports whether the module is tagged at each release and fetched by
// users with go get. The modules that are not have no API to offer: those under
// bench/ are comparisons run from a checkout, those under internal/ are the
// repository's own tools, and semdebug/browsertest is a test of the debug page
// in a browser.
func (m repoModule) Published() bool {
	for _, prefix := range []string{"bench/", "internal/"} {
		if strings.HasPrefix(m.Dir, prefix) {
			return false
		}
	}
	return m.Dir != "semdebug/browsertest"
}

// Tag is the git tag that releases the module at version: the version for the
// core, the module's directory, a slash and the version for a nested module.
func (m repoModule) Tag(version string) string {
	if m.Dir == "." {
		return version
	}
	return m.Dir + "/" + version
}

// findModules returns the modules of the repository whose root is root, the
// core first, then the nested modules by directory. It skips what the go command
// skips when it matches ./...: testdata and directories whose names start with
// "." or "_". Every module's path must be the one go get resolves to its
// directory, or the module could not be fetched from this repository.
func findModules(root string) ([]repoModule, error) {
	var mods []repoModule
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() != "go.mod" {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		m, err := readModule(root, filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		mods = append(mods, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(mods, func(a, b repoModule) int {
		switch {
		case a.Dir == b.Dir:
			return 0
		case a.Dir == ".":
			return -1
		case b.Dir == ".":
			return 1
		}
		return strings.Compare(a.Dir, b.Dir)
	})
	if len(mods) == 0 || mods[0].Dir != "." {
		return nil, fmt.Errorf("no go.mod of module %s in %s", rootPath, root)
	}
	return mods, nil
}

// readModule reads the go.mod of the module in dir and checks its module path.
func readModule(root, dir string) (repoModule, error) {
	name := path.Join(dir, "go.mod")
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		return repoModule{}, err
	}
	f, err := modfile.Parse(name, data, nil)
	if err != nil {
		return repoModule{}, err
	}
	if f.Module == nil {
		return repoModule{}, errors.New(name + ": no module line")
	}
	want := rootPath
	if dir != "." {
		want += "/" + dir
	}
	if got := f.Module.Mod.Path; got != want {
		return repoModule{}, fmt.Errorf("%s: module %s, but go get finds the module in %s only as %s", name, got, dir, want)
	}
	return repoModule{Dir: dir, Path: want, File: f}, nil
}
