package deploy_test

import (
	"archive/zip"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// modulePath is the module the README's install line names.
const modulePath = "github.com/lanewatch/lanewatch"

// The README's install line, `go install
// github.com/lanewatch/lanewatch/cmd/...@latest`, run as written into an
// empty module cache and an empty GOBIN, from outside any module. The
// module proxy is a folder: it serves this tree (its tracked and new files,
// as a module zip) as the latest version, and every dependency from the
// local module download cache, so nothing comes from the network. What it
// proves: the module path is the one the docs give, go.mod has no replace
// or exclude directive (which `go install …@version` refuses), go.mod and
// go.sum resolve every dependency, each command builds in module mode
// outside this tree, and the binaries are named sampler and policygen as
// every doc and deployment file calls them. What it cannot prove: that the
// public repository and its tag exist.
func TestGoInstallLatest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds every command from an empty module cache")
	}
	gomod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(gomod, []byte("module "+modulePath+"\n")) {
		t.Fatalf("go.mod does not declare module %s", modulePath)
	}
	const version = "v0.99.0"
	proxy := t.TempDir()
	at := filepath.Join(proxy, filepath.FromSlash(modulePath), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": []byte(`{"Version":"` + version + `","Time":"2026-12-01T00:00:00Z"}`),
		version + ".mod":  gomod,
		version + ".zip":  moduleZip(t, version),
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gomodcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	downloads := filepath.Join(strings.TrimSpace(string(gomodcache)), "cache", "download")

	gobin := t.TempDir()
	cmd := exec.Command("go", "install", modulePath+"/cmd/...@latest")
	cmd.Dir = t.TempDir() // outside any module
	cmd.Env = append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(downloads),
		"GOMODCACHE="+t.TempDir(),
		"GOBIN="+gobin,
		"GOFLAGS=-modcacherw -trimpath", // removable temp folders; -trimpath: the build cache serves the next run, whatever the temp paths
		"GOSUMDB=off",                   // the stand-in version is in no checksum database
		"GONOPROXY=", "GOPRIVATE=", "GOWORK=off", "GOTOOLCHAIN=local",
	)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install %s/cmd/...@latest: %v\n%s", modulePath, err, out)
	}
	entries, err := os.ReadDir(gobin)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"lanesim", "policygen", "sampler"}; !slices.Equal(names, want) {
		t.Fatalf("GOBIN holds %v, want %v", names, want)
	}
	for _, b := range []string{"sampler", "policygen"} {
		if _, ok := commandOf(b); !ok {
			t.Errorf("go install names a binary %s, which the deployment files do not run", b)
		}
		if out, err := exec.Command(filepath.Join(gobin, b), "-h").CombinedOutput(); err != nil {
			t.Errorf("%s -h: %v\n%s", b, err, out)
		}
	}
}

// moduleZip packs the repository's tracked and new (not ignored) files as
// the zip of modulePath@version, as a module proxy serves it.
func moduleZip(t *testing.T, version string) []byte {
	t.Helper()
	ls := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "-z")
	ls.Dir = repoRoot
	out, err := ls.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	n := 0
	seen := map[string]bool{} // a file in conflict is listed once per stage
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if seen[name] {
			continue
		}
		seen[name] = true
		path := filepath.Join(repoRoot, filepath.FromSlash(name))
		info, err := os.Lstat(path)
		if err != nil || !info.Mode().IsRegular() { // deleted in the work tree, or a link
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(modulePath + "@" + version + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("packed %d files; is git ls-files right?", n)
	}
	return buf.Bytes()
}
