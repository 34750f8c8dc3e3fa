// Command gomodzip writes a module's files as a module proxy serves one
// version of it: MODULE@VERSION.zip (the layout of golang.org/x/mod/zip:
// every file under "MODULE@VERSION/", nested modules and vendor/ left out,
// the Go tools' limits checked), .mod (the go.mod) and .info. tools/release.sh
// runs it on a copy of the checkout's tracked files.
//
//	gomodzip -dir DIR -module PATH -version vX.Y.Z -out OUTDIR [-time RFC3339]
//	gomodzip -check FILE.zip -module PATH -version vX.Y.Z
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

func main() {
	dir := flag.String("dir", "", "the module's root directory (its go.mod)")
	mod := flag.String("module", "", "the module path")
	version := flag.String("version", "", "the version, vX.Y.Z")
	out := flag.String("out", "", "where to write the .zip, .mod and .info")
	stamp := flag.String("time", "", "the version's time for .info (RFC 3339; default: now)")
	check := flag.String("check", "", "check a module zip instead of writing one")
	flag.Parse()
	m := module.Version{Path: *mod, Version: *version}
	if err := module.Check(m.Path, m.Version); err != nil {
		fail(err)
	}
	if *check != "" {
		files, err := modzip.CheckZip(m, *check)
		if err != nil {
			fail(err)
		}
		if err := files.Err(); err != nil {
			fail(err)
		}
		fmt.Printf("%s: %d files, none omitted or invalid\n", filepath.Base(*check), len(files.Valid))
		return
	}
	if *dir == "" || *out == "" {
		fail(fmt.Errorf("-dir and -out are required"))
	}
	when := time.Now().UTC()
	if *stamp != "" {
		t, err := time.Parse(time.RFC3339, *stamp)
		if err != nil {
			fail(err)
		}
		when = t.UTC()
	}
	base := filepath.Join(*out, filepath.Base(m.Path)+"@"+m.Version)
	zf, err := os.Create(base + ".zip")
	if err != nil {
		fail(err)
	}
	if err := modzip.CreateFromDir(zf, m, *dir); err != nil {
		zf.Close()
		os.Remove(base + ".zip")
		fail(err)
	}
	if err := zf.Close(); err != nil {
		fail(err)
	}
	gomod, err := os.ReadFile(filepath.Join(*dir, "go.mod"))
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(base+".mod", gomod, 0o644); err != nil {
		fail(err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    string
	}{m.Version, when.Format(time.RFC3339)})
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(base+".info", append(info, '\n'), 0o644); err != nil {
		fail(err)
	}
	fmt.Printf("%s.zip, .mod, .info\n", filepath.Base(base))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gomodzip:", err)
	os.Exit(1)
}
