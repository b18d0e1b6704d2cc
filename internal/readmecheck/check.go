package readmecheck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fairsem/semaphore/internal/buildflags"
)

// rootModulePath is the module path of the repository's root go.mod.
const rootModulePath = "github.com/fairsem/semaphore"

// Check compiles, and then vets, the README's Go snippets that belong to the
// module containing the test's working directory (the package being tested), and
// reports each compiler or vet message as a test error at its README line. Called
// from the root module, it also fails for a snippet that no module can compile
// and for a nested module that has snippets but no test calling Check.
//
// Under -short (the fast form of scripts/test.sh) it compiles the snippets and
// does not vet them: vet first computes facts about every package the snippets
// depend on, etcd's and gRPC's included, which takes minutes from a cold build
// cache. scripts/test.sh -full vets them.
func Check(t testing.TB) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("readmecheck: %v", err)
	}
	moduleDir, root, err := findModule(wd)
	if err != nil {
		t.Fatalf("readmecheck: %v", err)
	}
	rel, err := filepath.Rel(root, moduleDir)
	if err != nil {
		t.Fatalf("readmecheck: %v", err)
	}
	module := filepath.ToSlash(rel)
	readmePath := filepath.Join(root, "README.md")
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatalf("readmecheck: %v", err)
	}
	all, err := parseSnippets(readme)
	if err != nil {
		t.Fatalf("readmecheck: %v", err)
	}

	var mine []assigned
	for _, s := range all {
		names := selectedPackages(s.code)
		m, ok := moduleOf(names)
		switch {
		case !ok:
			if module == rootModule {
				t.Errorf("README.md:%d: the snippet uses packages of %s; no module can compile it", s.line, m)
			}
		case m == module:
			mine = append(mine, assigned{s, names})
		case module == rootModule && !hasCheckTest(filepath.Join(root, filepath.FromSlash(m))):
			t.Errorf("README.md:%d: the snippet belongs to module %s, which has no test calling readmecheck.Check", s.line, m)
		}
	}
	if len(mine) == 0 {
		t.Logf("readmecheck: no Go snippet of README.md belongs to module %s", module)
		return
	}
	lines := make([]int, len(mine))
	for i, s := range mine {
		lines[i] = s.line
	}
	t.Logf("readmecheck: compiling the Go snippets of README.md at lines %v in module %s", lines, module)
	for _, msg := range compile(t, moduleDir, module, readmePath, mine, !testing.Short()) {
		t.Error(msg)
	}
}

// An assigned snippet is one to compile, with the packages it selects from.
type assigned struct {
	snippet
	packages []string
}

// findModule returns the directory of the go.mod nearest above dir, and that of
// the repository's root go.mod (module github.com/fairsem/semaphore) at or above it.
func findModule(dir string) (module, root string, err error) {
	for d := dir; ; {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			if module == "" {
				module = d
			}
			if modulePath(data) == rootModulePath {
				return module, d, nil
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", "", err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", "", fmt.Errorf("no go.mod of module %s at or above %s", rootModulePath, dir)
		}
		d = parent
	}
}

func modulePath(gomod []byte) string {
	for line := range strings.Lines(string(gomod)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// hasCheckTest reports whether a test file at the top of dir calls Check.
func hasCheckTest(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil && bytes.Contains(data, []byte("readmecheck.Check(")) {
			return true
		}
	}
	return false
}

// readmeMessage matches a compiler or vet message positioned in the README by
// the generated //line directives.
var readmeMessage = regexp.MustCompile(`README\.md:(\d+):(\d+): (.*)$`)

// compile writes the snippets as one package in a temporary directory of the
// module, builds it with every error reported, vets it when it builds and vet
// is true, and returns one message per problem.
func compile(t testing.TB, moduleDir, module, readmePath string, snippets []assigned, vet bool) []string {
	t.Helper()
	dir, err := os.MkdirTemp(moduleDir, "_readmecheck")
	if err != nil {
		t.Fatalf("readmecheck: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatalf("readmecheck: %v", err)
		}
	}
	write("prelude.go", "package readmesnippets\n\n"+preludes[rootModule])
	if extra := preludes[module]; module != rootModule && extra != "" {
		write("prelude_module.go", "package readmesnippets\n\n"+extra)
	}
	for i, s := range snippets {
		write(fmt.Sprintf("snippet%d.go", i+1), snippetFile(i+1, readmePath, s))
	}

	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("readmecheck: the go command is needed to compile the snippets: %v", err)
	}
	pkg := "./" + filepath.Base(dir)
	run := func(args ...string) (string, bool) {
		cmd := exec.Command(goCmd, args...)
		cmd.Dir = moduleDir
		out, err := cmd.CombinedOutput()
		return string(out), err == nil
	}
	// The compiler reports every error at once; vet stops at the first type error.
	// Both build as the test was built (-race under go test -race), so that the
	// packages the snippets import come from the cache.
	flags := buildflags.Args()
	out, ok := run(slices.Concat([]string{"build"}, flags, []string{"-gcflags=-e", pkg})...)
	if ok && vet {
		out, ok = run(slices.Concat([]string{"vet"}, flags, []string{"-unreachable=false", pkg})...)
	}
	if ok {
		return nil
	}
	var msgs []string
	for line := range strings.Lines(out) {
		m := readmeMessage.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		msgs = append(msgs, fmt.Sprintf("README.md:%d: %s (Go snippet from line %d, compiled in module %s)",
			n, m[3], snippetStart(snippets, n), module))
	}
	if len(msgs) == 0 {
		msgs = append(msgs, fmt.Sprintf("readmecheck: compiling the README's snippets in module %s failed:\n%s", module, out))
	}
	return slices.Compact(msgs)
}

// snippetFile returns the Go file holding snippet number n as a function body.
// The //line directive makes the compiler report the snippet's own README lines.
func snippetFile(n int, readmePath string, s assigned) string {
	var b strings.Builder
	b.WriteString("package readmesnippets\n\n")
	for _, name := range s.packages {
		fmt.Fprintf(&b, "import %s %q\n", name, packages[name].path)
	}
	fmt.Fprintf(&b, "\nfunc snippet%d() error {\n", n)
	fmt.Fprintf(&b, "//line %s:%d:1\n", readmePath, s.line)
	b.WriteString(s.code)
	b.WriteString("\treturn nil\n}\n")
	return b.String()
}

// snippetStart returns the first line of the snippet containing README line n.
func snippetStart(snippets []assigned, n int) int {
	start := 0
	for _, s := range snippets {
		if s.line <= n {
			start = max(start, s.line)
		}
	}
	return start
}
