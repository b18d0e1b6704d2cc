package main

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// checkRequirements checks the rule that makes the published modules fetchable:
// a module requiring another module of the repository requires it at a release
// version, one version for the whole repository (the release both are part of),
// and keeps beside it a replace directive to that module's directory, so that
// inside the repository it builds against the other's working tree. A replace
// directive applies only in the module declaring it, so users never see it; the
// required version is what go get fetches. A published module may require only
// published ones. It returns the version, or "" when no module requires another.
func checkRequirements(mods []repoModule) (string, error) {
	byPath := make(map[string]repoModule, len(mods))
	for _, m := range mods {
		byPath[m.Path] = m
	}
	var (
		version, first string // the version required, and where it was first seen
		errs           []error
	)
	for _, m := range mods {
		name := path.Join(m.Dir, "go.mod")
		for _, r := range m.File.Require {
			dep, ok := byPath[r.Mod.Path]
			if !ok {
				continue
			}
			v := r.Mod.Version
			switch {
			case !isRelease(v):
				errs = append(errs, fmt.Errorf("%s: requires %s at %s, which is not a release version: require it at the version it is released with (go -C internal/release run . setversion VERSION sets that in every go.mod)", name, r.Mod.Path, v))
			case version == "":
				version, first = v, name
			case v != version:
				errs = append(errs, fmt.Errorf("%s: requires %s at %s, but %s requires the repository's modules at %s: every module is released at one version", name, r.Mod.Path, v, first, version))
			}
			if m.Published() && !dep.Published() {
				errs = append(errs, fmt.Errorf("%s: requires %s, which is not published", name, r.Mod.Path))
			}
			if want := relativeDir(m.Dir, dep.Dir); !replacedBy(m.File, r.Mod.Path, want) {
				errs = append(errs, fmt.Errorf("%s: requires %s without the directive \"replace %s => %s\": inside the repository it would build against the published version, not the working tree", name, r.Mod.Path, r.Mod.Path, want))
			}
		}
	}
	return version, errors.Join(errs...)
}

// isRelease reports whether v can be a released version of the repository's
// modules: canonical semantic version, major version 0 or 1 (a v2 needs /v2
// module paths), neither a pseudo-version nor the placeholder v0.0.0.
func isRelease(v string) bool {
	return semver.IsValid(v) && semver.Canonical(v) == v &&
		(semver.Major(v) == "v0" || semver.Major(v) == "v1") &&
		!module.IsPseudoVersion(v) && v != "v0.0.0"
}

// relativeDir is the directory to, a module directory relative to the
// repository's root, as a replace directive in the module in from names it.
func relativeDir(from, to string) string {
	if from == "." {
		return "./" + to
	}
	up := ".."
	for i := strings.Count(from, "/"); i > 0; i-- {
		up += "/.."
	}
	if to == "." {
		return up
	}
	return up + "/" + to
}

// replacedBy reports whether f replaces every version of modPath by the
// directory dir.
func replacedBy(f *modfile.File, modPath, dir string) bool {
	for _, r := range f.Replace {
		if r.Old.Path == modPath && r.Old.Version == "" && r.New.Version == "" && path.Clean(r.New.Path) == dir {
			return true
		}
	}
	return false
}

// withRequirements returns the go.mod of m with every requirement of a module
// of the repository set to version, formatted as the go command formats it, and
// whether it changed.
func withRequirements(m repoModule, mods []repoModule, version string) ([]byte, bool, error) {
	f, err := modfile.Parse(path.Join(m.Dir, "go.mod"), modfile.Format(m.File.Syntax), nil)
	if err != nil {
		return nil, false, err
	}
	changed := false
	for _, dep := range mods {
		for _, r := range f.Require {
			if r.Mod.Path == dep.Path && r.Mod.Version != version {
				if err := f.AddRequire(dep.Path, version); err != nil {
					return nil, false, err
				}
				changed = true
				break
			}
		}
	}
	f.Cleanup()
	return modfile.Format(f.Syntax), changed, nil
}
