package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// publish writes the published modules of the working tree in root to the module
// proxy in dir, a directory that GOPROXY=file://DIR serves, at version. Each
// module is what its tag would release: the files git would commit (tracked and
// untracked ones, less the ignored), its go.mod requiring the repository's
// modules at version, and, in a nested module without a LICENSE, the root's, as
// the go command adds it when it fetches the module from the repository.
func publish(root string, mods []repoModule, version, dir string) error {
	files, err := workTreeFiles(root)
	if err != nil {
		return err
	}
	for _, m := range mods {
		if !m.Published() {
			continue
		}
		gomod, _, err := withRequirements(m, mods, version)
		if err != nil {
			return err
		}
		if err := publishModule(root, m, version, gomod, files, dir); err != nil {
			return fmt.Errorf("publish %s@%s: %w", m.Path, version, err)
		}
	}
	return nil
}

// workTreeFiles lists the files of the working tree that git would commit,
// slash-separated and relative to root.
func workTreeFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("list the files of the working tree in %s: %w: %s", root, err, stderr.Bytes())
	}
	var files []string
	for name := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		// A tracked file deleted in the working tree is not published.
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(name))); err == nil {
			files = append(files, name)
		}
	}
	slices.Sort(files)
	return slices.Compact(files), nil
}

// publishModule writes m's list, .info, .mod and .zip files to the proxy in dir.
// The zip package leaves out the files of nested modules and vendored packages,
// and rejects a file name that no module may hold.
func publishModule(root string, m repoModule, version string, gomod []byte, files []string, dir string) error {
	prefix := ""
	if m.Dir != "." {
		prefix = m.Dir + "/"
	}
	var zfiles []zip.File
	haveLicense := false
	for _, name := range files {
		rel, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		switch rel {
		case "go.mod":
			continue // added below, at the published version
		case "LICENSE":
			haveLicense = true
		}
		zfiles = append(zfiles, diskFile{path: rel, name: filepath.Join(root, filepath.FromSlash(name))})
	}
	zfiles = append(zfiles, memFile{path: "go.mod", data: gomod})
	if !haveLicense {
		zfiles = append(zfiles, diskFile{path: "LICENSE", name: filepath.Join(root, "LICENSE")})
	}

	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	vdir := filepath.Join(dir, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	var z bytes.Buffer
	if err := zip.Create(&z, module.Version{Path: m.Path, Version: version}, zfiles); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	for ext, data := range map[string][]byte{".zip": z.Bytes(), ".mod": gomod, ".info": info} {
		if err := os.WriteFile(filepath.Join(vdir, version+ext), data, 0o644); err != nil {
			return err
		}
	}
	return addToList(filepath.Join(vdir, "list"), version)
}

// addToList adds version to the proxy's list of a module's versions.
func addToList(name, version string) error {
	data, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(data))
	if slices.Contains(versions, version) {
		return nil
	}
	versions = append(versions, version)
	return os.WriteFile(name, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

// A diskFile is a file of the working tree, at path in the module.
type diskFile struct{ path, name string }

func (f diskFile) Path() string                 { return f.path }
func (f diskFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.name) }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.name) }

// A memFile is a file made here, such as a go.mod at the published version.
type memFile struct {
	path string
	data []byte
}

func (f memFile) Path() string                 { return f.path }
func (f memFile) Lstat() (os.FileInfo, error)  { return memFileInfo{f}, nil }
func (f memFile) Open() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(f.data)), nil }

type memFileInfo struct{ f memFile }

func (fi memFileInfo) Name() string       { return path.Base(fi.f.path) }
func (fi memFileInfo) Size() int64        { return int64(len(fi.f.data)) }
func (fi memFileInfo) Mode() fs.FileMode  { return 0o644 }
func (fi memFileInfo) ModTime() time.Time { return time.Time{} }
func (fi memFileInfo) IsDir() bool        { return false }
func (fi memFileInfo) Sys() any           { return nil }
