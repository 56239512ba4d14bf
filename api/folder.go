package api

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/lanewatch/lanewatch/internal/atomicfile"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

// MaxPolicyFile bounds the bytes of a policy file that is read.
const MaxPolicyFile = 1 << 20

// Folder is a folder of policy files, <Dir>/<YYYY-MM-DDTHH>.yaml, the hours
// keyed in Location (nil: UTC), as policygen writes them.
type Folder struct {
	Dir      string
	Location *time.Location
}

// NoFileError says that the folder has no policy file for the hour.
type NoFileError struct {
	Hour, Path string
}

func (e *NoFileError) Error() string {
	return fmt.Sprintf("no policy file for %s: %s does not exist", e.Hour, e.Path)
}

// Path is the file of the hour labelled hour.
func (d Folder) Path(hour string) string { return filepath.Join(d.Dir, hour+".yaml") }

// Write writes f as the file of its hour, atomically, creating Dir, and
// returns its path (<hour>.yaml, or one site's view <hour>.<site>.yaml)
// and bytes.
func (d Folder) Write(f policy.File, site string, opts ...atomicfile.Option) (path string, data []byte, err error) {
	if data, err = policy.Marshal(f); err != nil {
		return "", nil, fmt.Errorf("policy %s: %w", f.Hour, err)
	}
	path = d.Path(f.Hour)
	if site != "" {
		path = filepath.Join(d.Dir, f.Hour+"."+site+".yaml")
	}
	return path, data, atomicfile.Write(path, data, append([]atomicfile.Option{atomicfile.MakeDir()}, opts...)...)
}

// Read is ReadFile of the hour labelled hour (store.HourLabel), checked to
// hold that hour; a missing file is a *NoFileError.
func (d Folder) Read(hour string) (policy.File, []byte, error) {
	path := d.Path(hour)
	f, data, err := ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return policy.File{}, nil, &NoFileError{Hour: hour, Path: path}
	}
	if err == nil && f.Hour != hour {
		err = fmt.Errorf("%s: holds hour %q, want %q", path, f.Hour, hour)
	}
	return f, data, err
}

// ReadFile reads and checks the policy file at path, at most MaxPolicyFile
// bytes, and returns it with its bytes. Anything but a regular file is
// refused before a byte is read (O_NONBLOCK: a pipe's writer is not waited
// for).
func ReadFile(path string) (policy.File, []byte, error) {
	data, err := readRegular(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return policy.File{}, nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	f, err := policy.ParseFile(data)
	if err != nil {
		return policy.File{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, data, nil
}

func readRegular(path string) ([]byte, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("not a regular file (%s)", modeName(fi.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(fh, MaxPolicyFile+1))
	if err == nil && len(data) > MaxPolicyFile {
		err = fmt.Errorf("larger than %d bytes", MaxPolicyFile)
	}
	return data, err
}

func modeName(m fs.FileMode) string {
	for _, k := range []struct {
		bit  fs.FileMode
		name string
	}{{fs.ModeDir, "a directory"}, {fs.ModeCharDevice, "a character device"}, {fs.ModeDevice, "a device"}, {fs.ModeNamedPipe, "a named pipe"}, {fs.ModeSocket, "a socket"}} {
		if m&k.bit != 0 {
			return k.name
		}
	}
	return "mode " + m.String()
}

// Next is the first hour, from a given one on, in which a class fits.
type Next struct {
	Class string   `json:"class"`
	Hour  string   `json:"hour"`  // YYYY-MM-DDTHH in the folder's zone
	Start string   `json:"start"` // the hour's start, RFC 3339 UTC
	Basis string   `json:"basis"` // the file's basis: live or forecast
	Lanes []string `json:"lanes"` // the class's lanes that hour; the first is the choice
}

// NoNextError says that no policy file from the hour on (Files of them)
// lets the class fit.
type NoNextError struct {
	Class, From string
	Files       int
}

func (e *NoNextError) Error() string {
	if e.Files == 0 {
		return fmt.Sprintf("no policy files from %s on (policygen -config F -day today and -day tomorrow write the forecasts)", e.From)
	}
	return fmt.Sprintf("class %q fits in none of the %d policy files from %s on", e.Class, e.Files, e.From)
}

var hourFileRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}\.yaml$`)

// Next returns the first hour from the one holding from on whose policy
// file starts a job of class on a lane (policy.Class.Start); a bad file is
// an error, none a *NoNextError.
func (d Folder) Next(from time.Time, class string) (Next, error) {
	loc := store.OrUTC(d.Location)
	fromLabel := store.HourLabel(store.HourStart(from, loc), loc)
	entries, err := os.ReadDir(d.Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Next{}, fmt.Errorf("policy folder: %w", err)
	}
	var labels []string // sorted as the hours are: os.ReadDir sorts by name
	for _, e := range entries {
		name := e.Name()
		if !hourFileRE.MatchString(name) || !e.Type().IsRegular() {
			continue
		}
		if label := name[:len(name)-len(".yaml")]; label >= fromLabel {
			labels = append(labels, label)
		}
	}
	for _, label := range labels {
		f, _, err := d.Read(label)
		if err != nil {
			return Next{}, err
		}
		c, ok := f.Class(class)
		if lane, _ := c.Start(); !ok || lane == "" {
			continue
		}
		start, err := store.ParseHour(label, loc)
		if err != nil {
			return Next{}, fmt.Errorf("%s: %w", d.Path(label), err)
		}
		return Next{Class: class, Hour: label, Start: start.UTC().Format(time.RFC3339), Basis: f.Basis, Lanes: c.Lanes}, nil
	}
	return Next{}, &NoNextError{Class: class, From: fromLabel, Files: len(labels)}
}
