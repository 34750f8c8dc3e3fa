package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// generatedFiles lists the files gen writes in a package directory: the C++
// wrappers, sources_digest.go and everything under generated/.
func generatedFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	wrappers, err := filepath.Glob(filepath.Join(dir, "*.c*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wrappers {
		out = append(out, filepath.Base(w))
	}
	if _, err := os.Stat(filepath.Join(dir, "sources_digest.go")); err == nil {
		out = append(out, "sources_digest.go")
	}
	err = filepath.WalkDir(filepath.Join(dir, "generated"), func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// The committed files of package bundled are what gen writes from the
// sources as they are now: a core source added to CMake, a changed script,
// vocabulary or core file all fail here until `go generate` runs again.
func TestCommittedFilesAreCurrent(t *testing.T) {
	for _, tool := range []string{"cmake", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: cannot regenerate (tests/go/run.sh requires it)", tool)
		}
	}
	const root, committed = "../../../../..", ".."
	fresh := t.TempDir()
	if err := generate(root, fresh); err != nil {
		t.Fatal(err)
	}
	want, have := generatedFiles(t, fresh), generatedFiles(t, committed)
	if strings.Join(want, " ") != strings.Join(have, " ") {
		t.Fatalf("bindings/go/internal/bundled has\n  %v\ngen writes\n  %v\nrun go generate there", have, want)
	}
	for _, f := range want {
		a, err := os.ReadFile(filepath.Join(fresh, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(committed, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("bindings/go/internal/bundled/%s is out of date: run go generate there", f)
		}
	}
}

// Every source CMake compiles into the library has a wrapper, and the list
// is not empty: a parser that found nothing would pass the test above.
func TestLibrarySourcesMatchCMake(t *testing.T) {
	srcs, err := librarySources("../../../../..")
	if err != nil {
		t.Fatal(err)
	}
	var capi, core int
	for _, s := range srcs {
		if _, err := os.Stat(filepath.Join("../../../../..", s)); err != nil {
			t.Errorf("%s: listed in CMake but %v", s, err)
		}
		if _, err := os.Stat(filepath.Join("..", wrapperName(s))); err != nil {
			t.Errorf("%s has no wrapper: %v", s, err)
		}
		switch {
		case strings.HasPrefix(s, "capi/"):
			capi++
		case strings.HasPrefix(s, "core/"):
			core++
		}
	}
	if capi != 1 || core < 20 {
		t.Errorf("found %d C ABI and %d core sources in CMake (want 1 and at least 20): %v", capi, core, srcs)
	}
}

// The digest covers the core's sources: changing one byte of one changes it.
func TestDigestSeesASourceChange(t *testing.T) {
	root := t.TempDir()
	for _, d := range digestDirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// In a layer folder: the digest walks core/src's subfolders too.
	src := filepath.Join(root, "core/src/net/a.cpp")
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, []byte("int a = 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "bindings/go/internal/bundled")
	before, err := digest(root, out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, []byte("int a = 2;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	after, err := digest(root, out)
	if err != nil {
		t.Fatal(err)
	}
	if before == after {
		t.Fatal("the digest did not change with a core source")
	}
}
