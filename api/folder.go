package api

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"
	"time"

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

// Read reads and checks the policy file of the hour labelled hour
// (hours.Label) and returns it with its bytes. A missing file is a
// *NoFileError; other errors name the path.
func (d Folder) Read(hour string) (policy.File, []byte, error) {
	path := d.Path(hour)
	data, err := readCapped(path, MaxPolicyFile)
	if errors.Is(err, fs.ErrNotExist) {
		return policy.File{}, nil, &NoFileError{Hour: hour, Path: path}
	}
	if err != nil {
		return policy.File{}, nil, err
	}
	f, err := policy.ParseFile(data)
	if err != nil {
		return policy.File{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.Hour != hour {
		return policy.File{}, nil, fmt.Errorf("%s: holds hour %q, want %q", path, f.Hour, hour)
	}
	return f, data, nil
}

// readCapped reads path, at most limit bytes. Anything but a regular file
// (a link is followed) is refused: the open does not wait for a named
// pipe's writer (O_NONBLOCK, which a regular file ignores), and the opened
// file is checked before a byte is read, so a pipe, a device such as
// /dev/zero or a directory is one error line, not a request that blocks
// for good or reads without end.
func readCapped(path string, limit int64) ([]byte, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("policy file %s: not a regular file (%s)", path, modeName(fi.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("policy file %s: larger than %d bytes", path, limit)
	}
	return data, nil
}

// modeName names what a file that is not a regular one is, as the stores'
// refusals do (file.ErrNotRegular).
func modeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
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

// NoNextError says that no policy file from the hour on lets the class
// fit; Files is how many there were (0: none, run policygen -day).
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
// file (live or forecast, as policygen -day writes them) starts a job of
// class on a lane (policy.Class.Start: it lists a lane, or its decision
// starts free). Files are read in hour order until one fits; a file that does not
// have the class does not fit, a bad file is an error. None is a
// *NoNextError.
func (d Folder) Next(from time.Time, class string) (Next, error) {
	loc := store.OrUTC(d.Location)
	fromLabel := store.HourLabel(store.HourStart(from, loc), loc)
	entries, err := os.ReadDir(d.Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Next{}, fmt.Errorf("policy folder: %w", err)
	}
	var labels []string
	for _, e := range entries {
		name := e.Name()
		if !hourFileRE.MatchString(name) || !e.Type().IsRegular() {
			continue
		}
		if label := name[:len(name)-len(".yaml")]; label >= fromLabel {
			labels = append(labels, label)
		}
	}
	slices.Sort(labels) // labels sort as the hours do
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
