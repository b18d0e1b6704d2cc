// Command release prepares the releases of the repository's modules and
// publishes them to a local module proxy for the publish check. RELEASING.md
// describes the procedure; scripts/release.sh and scripts/publish-check.sh run
// this command.
//
//	release [-root DIR] modules             the modules: directory, path, published or not
//	release [-root DIR] check               check the requirements between modules; print their version
//	release [-root DIR] tags VERSION        the tags that release every published module at VERSION
//	release [-root DIR] setversion VERSION  require the repository's modules at VERSION in every go.mod
//	release [-root DIR] publish VERSION DIR write every published module at VERSION to the proxy in DIR
//
// The root defaults to the directory of the go.mod of the core module at or
// above the working directory.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// errUsage is returned for a command line that names no command this runs.
var errUsage = errors.New("usage: release [-root DIR] modules | check | tags VERSION | setversion VERSION | publish VERSION DIR")

func run(out io.Writer, args []string) error {
	fl := flag.NewFlagSet("release", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	root := fl.String("root", "", "the repository's root directory")
	if err := fl.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	args = fl.Args()
	if len(args) == 0 {
		return errUsage
	}
	cmd, args := args[0], args[1:]
	want := map[string]int{"modules": 0, "check": 0, "tags": 1, "setversion": 1, "publish": 2}
	if n, ok := want[cmd]; !ok || len(args) != n {
		return errUsage
	}
	if len(args) > 0 && !isRelease(args[0]) {
		return fmt.Errorf("version %q: want a semantic version vMAJOR.MINOR.PATCH[-PRERELEASE] of major version 0 or 1, not v0.0.0", args[0])
	}
	if *root == "" {
		var err error
		if *root, err = findRoot(); err != nil {
			return err
		}
	}
	mods, err := findModules(*root)
	if err != nil {
		return err
	}

	switch cmd {
	case "modules":
		for _, m := range mods {
			state := "published"
			if !m.Published() {
				state = "not-published"
			}
			fmt.Fprintln(out, m.Dir, m.Path, state)
		}
	case "check":
		v, err := checkRequirements(mods)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, v)
	case "tags":
		for _, m := range mods {
			if m.Published() {
				fmt.Fprintln(out, m.Tag(args[0]))
			}
		}
	case "setversion":
		for _, m := range mods {
			data, changed, err := withRequirements(m, mods, args[0])
			if err != nil {
				return err
			}
			if !changed {
				continue
			}
			name := filepath.Join(*root, filepath.FromSlash(m.Dir), "go.mod")
			if err := os.WriteFile(name, data, 0o644); err != nil {
				return err
			}
			fmt.Fprintln(out, filepath.ToSlash(filepath.Join(m.Dir, "go.mod")))
		}
	case "publish":
		return publish(*root, mods, args[0], args[1])
	}
	return nil
}

// findRoot returns the directory of the core's go.mod at or above the working
// directory.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if m, err := readModule(d, "."); err == nil && m.Path == rootPath {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of module %s at or above %s", rootPath, dir)
		}
	}
}
