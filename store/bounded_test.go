package store

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// endless is a reader that never ends: its pattern, again and again.
type endless struct{ pattern []byte }

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.pattern[i%len(e.pattern)]
	}
	return len(p), nil
}

// endlessSources are readers without end: one line that never ends (the
// over-long-line path), corrupt lines without end, and /dev/zero where it
// exists.
func endlessSources(t *testing.T) map[string]func() io.Reader {
	srcs := map[string]func() io.Reader{
		"zeros":         func() io.Reader { return endless{[]byte{0}} },
		"corrupt lines": func() io.Reader { return endless{[]byte("not a point\n")} },
		"torn probes": func() io.Reader {
			return endless{[]byte("probe,kind=free,lane=a queue_s=1 1795960800000000000\nprobe,kind=")}
		},
	}
	if f, err := os.Open("/dev/zero"); err == nil {
		t.Cleanup(func() { _ = f.Close() })
		srcs["/dev/zero"] = func() io.Reader { return f }
	}
	return srcs
}

// promptly runs f with a context cancelled after a moment and fails the
// test unless f returns, with the context's error, soon after.
func promptly(t *testing.T, f func(ctx context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("returned %v, want context.Canceled", err)
		}
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("still reading 10 s after the context was cancelled")
		return nil
	}
}

// An import of a source without end stops when its context is cancelled
// (as sampler import does on SIGTERM), with one line saying so.
func TestImportEndlessStopsOnCancel(t *testing.T) {
	for name, src := range endlessSources(t) {
		t.Run(name, func(t *testing.T) {
			st, err := OpenFile(filepath.Join(t.TempDir(), "s.lp"), FileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			rec := NewRecorder(st, time.UTC)
			err = promptly(t, func(ctx context.Context) error {
				_, err := Import(ctx, rec, src(), nil)
				return err
			})
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is more than one line", err)
			}
		})
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
			s, err := OpenFile(path, FileOptions{ReadOnly: ro})
			if err == nil {
				_ = s.Close()
			}
			return err
		}
	}
	openSpool := func(path string) error {
		s, err := OpenSpool(&memStore{}, SpoolOptions{Path: path})
		if err == nil {
			_ = s.Close()
		}
		return err
	}
	openImport := func(path string) error {
		f, err := OpenImport(path)
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
				if !errors.Is(err, ErrNotRegular) {
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
func TestFileReadRefusesReplacedByDevice(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	path := filepath.Join(t.TempDir(), "s.lp")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFile(path, FileOptions{ReadOnly: true})
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
	_, err = s.Probes(t.Context(), Between(time.Unix(0, 0), time.Now()))
	if !errors.Is(err, ErrNotRegular) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v, want one line wrapping ErrNotRegular", err)
	}
}

// memStore is a Store that keeps nothing and reads nothing.
type memStore struct{}

func (memStore) Write(context.Context, []Probe, []Hourly) error  { return nil }
func (memStore) Probes(context.Context, Query) ([]Probe, error)  { return nil, nil }
func (memStore) Hourly(context.Context, Query) ([]Hourly, error) { return nil, nil }
func (memStore) Close() error                                    { return nil }

// A read-only spool at /dev/zero (policygen beside a misconfigured
// sampler) is not read: reads return the store's points at once and warn
// that the spool is not readable.
func TestReadOnlySpoolOfDeviceIsNotRead(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	var warned []string
	s, err := OpenSpool(memStore{}, SpoolOptions{Path: "/dev/zero", ReadOnly: true,
		Warn: func(msg string, args ...any) { warned = append(warned, msg) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() {
		_, err := s.Probes(t.Context(), Between(time.Unix(0, 0), time.Now()))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("read still running after 10 s")
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "spool not readable") {
		t.Errorf("warnings %q, want one saying the spool is not readable", warned)
	}
}
