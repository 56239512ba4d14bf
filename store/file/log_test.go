package file_test

// The files under the stores (log.go): a writer's lock, which names its
// holder, appends beside it, and the paths refused.

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
	"github.com/lanewatch/lanewatch/store/spool"
	"github.com/lanewatch/lanewatch/store/storetest"
)

var all = store.Between(hour0.Add(-48*time.Hour), hour0.Add(48*time.Hour))

// nopStore keeps nothing and reads nothing.
type nopStore struct{}

func (nopStore) Write(context.Context, store.Batch) error               { return nil }
func (nopStore) Read(context.Context, store.Query, store.Reader) error  { return nil }
func (nopStore) Prune(context.Context, time.Time) (store.Pruned, error) { return store.Pruned{}, nil }
func (nopStore) Status() store.Status                                   { return store.Status{Where: "nowhere"} }
func (nopStore) Close() error                                           { return nil }

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A second writer is refused in one line that names the file, its lock,
// the holder (its pid, host and start) and sampler probe as the way to
// probe beside it.
func TestLockNamesItsHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.lp")
	w, err := file.Open(path, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	host, _ := os.Hostname()
	_, err = file.Open(path, file.Options{})
	if err == nil {
		t.Fatal("a second writer opened the file")
	}
	msg := err.Error()
	for _, want := range []string{path + " is in use by another sampler", "pid " + strconv.Itoa(os.Getpid()), "host " + host,
		"since " + time.Now().UTC().Format("2006-01-02T"), "lock " + path + ".lock", "sampler probe -lane NAME, with the same -config, probes beside it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("refusal %q is more than one line", msg)
	}
}

// Anything but a regular file, named as a store, spool or import source,
// is refused at once with one line that names the path: a device would
// read without end, a named pipe block the open.
func TestNotRegularRefused(t *testing.T) {
	dir := t.TempDir()
	type open func(path string) error
	openFile := func(ro bool) open {
		return func(path string) error {
			s, err := file.Open(path, file.Options{ReadOnly: ro})
			if err == nil {
				_ = s.Close()
			}
			return err
		}
	}
	openSpool := func(path string) error {
		s, err := spool.Open(nopStore{}, spool.Options{Path: path})
		if err == nil {
			_ = s.Close()
		}
		return err
	}
	openImport := func(path string) error {
		f, err := file.OpenImport(path)
		if err == nil {
			_ = f.Close()
		}
		return err
	}
	opens := map[string]open{"file store read-only": openFile(true), "file store": openFile(false), "spool": openSpool, "import": openImport}

	paths := map[string]string{"a directory": dir}
	if _, err := os.Stat("/dev/zero"); err == nil {
		paths["/dev/zero"] = "/dev/zero"
		link := filepath.Join(dir, "samples.lp")
		if err := os.Symlink("/dev/zero", link); err != nil {
			t.Fatal(err)
		}
		paths["a link to /dev/zero"] = link
	}
	if fifo, ok := makeFIFO(t, dir); ok {
		paths["a named pipe"] = fifo
	}
	for pname, path := range paths {
		for oname, open := range opens {
			t.Run(oname+" of "+pname, func(t *testing.T) {
				done := make(chan error, 1)
				go func() { done <- open(path) }()
				var err error
				select {
				case err = <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("open still blocked after 10 s")
				}
				if !errors.Is(err, file.ErrNotRegular) {
					t.Fatalf("error %v, want ErrNotRegular", err)
				}
				msg := err.Error()
				if strings.Contains(msg, "\n") || !strings.Contains(msg, path+": not a regular file (") {
					t.Errorf("error %q: want one line naming %s", msg, path)
				}
				if link := strings.HasPrefix(pname, "a link"); link != strings.Contains(msg, "(a link to /dev/zero, a character device)") {
					t.Errorf("error %q: want the link's target named only for a link", msg)
				}
			})
		}
	}
	if _, err := os.Lstat("/dev/zero.lock"); err == nil {
		t.Error("a writer created /dev/zero.lock before refusing /dev/zero")
	}
}

// A read-only store whose file is replaced by a link to /dev/zero after it
// was opened refuses the read instead of reading without end.
func TestReadRefusesReplacedByDevice(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	path := filepath.Join(t.TempDir(), "s.lp")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := file.Open(path, file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
	_, err = store.ReadProbes(t.Context(), s, store.Between(time.Unix(0, 0), time.Now()))
	if !errors.Is(err, file.ErrNotRegular) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v, want one line wrapping ErrNotRegular", err)
	}
}

// Finding 3: a symlink to the store file got its own lock in the previous
// release, so two daemons wrote one file. OpenFile locks the resolved path:
// the second open fails, naming the lock, whichever name each one used.
func TestSymlinkedStoreSharesTheLock(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(real, "samples.lp")
	fileLink := filepath.Join(dir, "link.lp")
	dirLink := filepath.Join(dir, "linkdir")
	for link, to := range map[string]string{fileLink: target, dirLink: real} {
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
	}
	lock := target + ".lock"
	for _, c := range []struct {
		name          string
		first, second string
		create        bool // the target exists before the first open
	}{
		{"link to a file not created yet, then the real path", fileLink, target, false},
		{"real path, then a link to it", target, fileLink, true},
		{"link to the file, then the real path", fileLink, target, true},
		{"symlinked folder, then the real folder", filepath.Join(dirLink, "samples.lp"), target, true},
		{"real folder, then a symlinked one", target, filepath.Join(dirLink, "samples.lp"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_ = os.Remove(target)
			if c.create {
				if err := os.WriteFile(target, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			w1, err := file.Open(c.first, file.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer w1.Close()
			if w1.Status().Where != target {
				t.Errorf("Status().Where = %s, want the resolved %s", w1.Status().Where, target)
			}
			w2, err := file.Open(c.second, file.Options{})
			if err == nil {
				_ = w2.Close()
				t.Fatalf("a second writer opened %s while %s is open: two daemons would append to one file", c.second, c.first)
			}
			if !strings.Contains(err.Error(), lock) || !strings.Contains(err.Error(), "in use") {
				t.Errorf("second OpenFile = %v; want an in-use error naming %s", err, lock)
			}
			if fi, err := os.Lstat(fileLink); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link was replaced: %v %v", fi, err)
			}
		})
	}
}

// Finding 3: a store file moved away (or deleted, or replaced) while the
// daemon runs was written to silently in the previous release, while
// policygen said "no such file" and /healthz said ok. Write now refuses with
// ErrMoved and writes nothing to the file that moved.
func TestMovedWhileOpen(t *testing.T) {
	for _, c := range []struct {
		name string
		do   func(path, aside string) error
	}{
		{"moved", func(path, aside string) error { return os.Rename(path, aside) }},
		{"deleted", func(path, aside string) error {
			if err := os.Link(path, aside); err != nil { // keep a name to check it is not written
				return err
			}
			return os.Remove(path)
		}},
		{"replaced", func(path, aside string) error {
			if err := os.Rename(path, aside); err != nil {
				return err
			}
			return os.WriteFile(path, nil, 0o644)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path, aside := filepath.Join(dir, "samples.lp"), filepath.Join(dir, "aside.lp")
			s, err := file.Open(path, file.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Write(ctx, store.Batch{Probes: []store.Probe{probeAt("a", 0, 1)}}); err != nil {
				t.Fatal(err)
			}
			before := readFile(t, path)
			if err := c.do(path, aside); err != nil {
				t.Fatal(err)
			}
			err = s.Write(ctx, store.Batch{Probes: []store.Probe{probeAt("a", time.Minute, 2)}})
			if !errors.Is(err, file.ErrMoved) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Write after the file was %s = %v; want ErrMoved naming %s", c.name, err, path)
			}
			if got := readFile(t, aside); got != before {
				t.Errorf("the %s file was written to:\n%s", c.name, got)
			}
			if b, err := os.ReadFile(path); err == nil && len(b) != 0 {
				t.Errorf("the new file at the path was written to:\n%s", b)
			}
			if _, err := store.ReadProbes(ctx, s, store.Between(hour0, hour0.Add(time.Hour))); !errors.Is(err, file.ErrMoved) {
				t.Errorf("Probes after the file was %s = %v; want ErrMoved", c.name, err)
			}
		})
	}
}

// The error of a read of a removed file names it once.
func TestReadOfARemovedFileNamesItOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.lp")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := file.Open(path, file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	_, err = store.ReadProbes(ctx, r, store.Between(hour0, hour0.Add(time.Hour)))
	if err == nil || strings.Count(err.Error(), path) != 1 || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read of a removed file = %v; want %s named once, and fs.ErrNotExist", err, path)
	}
}

// TestBesideTheWriter: for random sequences of rounds appended
// by the writer (which holds the lock) and by a store beside it, at
// once from two goroutines, with prunes by the writer (each renames a new
// file over the old one) in between, every point either wrote reads back,
// through the writer and through the one beside it, and no line is torn.
func TestBesideTheWriter(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		path := filepath.Join(t.TempDir(), "samples.lp")
		w, err := file.Open(path, file.Options{Warn: storetest.FailOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		sh, err := file.Open(path, file.Options{Beside: true, Warn: storetest.FailOnWarn(t)})
		if err != nil {
			t.Fatal(err)
		}
		stores := []store.Store{w, sh}
		n := 5 + r.IntN(30)
		var want []store.Probe
		rounds := make([][][]store.Probe, 2)
		for i := range n {
			who := r.IntN(2)
			p := probeAt([]string{"a", "b"}[who], time.Duration(i)*time.Second, float64(r.IntN(90)))
			rounds[who] = append(rounds[who], []store.Probe{p})
			want = append(want, p)
		}
		var wg sync.WaitGroup
		for who, st := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j, round := range rounds[who] {
					if err := st.Write(ctx, store.Batch{Probes: round}); err != nil {
						t.Error(err)
						return
					}
					if who == 0 && j%3 == 1 { // a prune that drops nothing but replaces the file
						if _, err := w.Prune(ctx, hour0.Add(-time.Hour)); err != nil {
							t.Error(err)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		for _, st := range stores {
			got, err := store.ReadProbes(ctx, st, all)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("seed %d: read %d probes, want %d", seed, len(got), len(want))
			}
			for i := range want {
				if !got[i].Time.Equal(want[i].Time) || got[i].Lane != want[i].Lane || got[i].QueueS != want[i].QueueS {
					t.Fatalf("seed %d: probe %d is %+v, want %+v", seed, i, got[i], want[i])
				}
			}
		}
		_ = sh.Close()
		_ = w.Close()
	}
}

// An append beside the writer after a torn last line (a writer's append cut
// short by a crash) starts on a line of its own, so the booking reads
// back; the torn line stays skipped, as before. A store path that names
// a directory is refused.
func TestBesideCases(t *testing.T) {
	cases := []struct {
		name    string
		before  string // the file's content before the shared append; "-" for a directory
		probes  int    // the probes that read back
		wantErr string
	}{
		{name: "empty", before: "", probes: 1},
		{name: "whole lines", before: "probe,kind=free,lane=z ok=true,outcome=\"ok\",queue_s=1 1796047200000000000\n", probes: 2},
		{name: "torn tail", before: "probe,kind=free,lane=z ok=tr", probes: 1},
		{name: "directory", before: "-", wantErr: "not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "samples.lp")
			var err error
			if c.before == "-" {
				err = os.Mkdir(path, 0o755)
			} else {
				err = os.WriteFile(path, []byte(c.before), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			sh, err := file.Open(path, file.Options{Beside: true})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer sh.Close()
			if err := sh.Write(ctx, store.Batch{Probes: []store.Probe{probeAt("a", time.Minute, 3)}}); err != nil {
				t.Fatal(err)
			}
			got, err := store.ReadProbes(ctx, sh, all)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != c.probes {
				t.Fatalf("read %d probes, want %d: %+v", len(got), c.probes, got)
			}
		})
	}
}
