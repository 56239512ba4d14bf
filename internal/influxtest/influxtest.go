// Package influxtest runs real InfluxDB 1.8 servers (influxd processes on
// loopback) for tests: one per test with Start, or one shared by a test
// binary with URL.
//
// The influxd binary comes from $INFLUXD_BIN, else
// ${LANEWATCH_CACHE:-$HOME/.cache/lanewatch}/bin/influxd (scripts/influxd.sh
// build puts it there). Without it tests are skipped, except when CI=true,
// where they fail.
package influxtest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/missingtool"
)

// Options tune StartWith.
type Options struct {
	// Auth turns on HTTP authentication with an admin user User:Password
	// (defaults admin / lanewatch-test-pw). The token for the stores is then
	// "user:password".
	Auth     bool
	User     string
	Password string
	// Bin is the influxd binary to run instead of Binary(), e.g. a newer
	// release built by scripts/influxd.sh build VERSION. A missing one
	// skips the test (fails it when CI=true), as a missing Binary() does.
	Bin string
	// Env adds INFLUXDB_* settings to the server's environment (e.g.
	// "INFLUXDB_COORDINATOR_MAX_SELECT_POINT=500"); they override the
	// defaults.
	Env []string
}

// Server is one influxd process with its own data folder and ports.
type Server struct {
	URL      string // http://127.0.0.1:PORT
	User     string // admin user when started with Auth
	Password string

	bin     string
	dir     string
	env     []string
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Binary returns the path of the influxd binary tests use.
func Binary() string {
	if b := os.Getenv("INFLUXD_BIN"); b != "" {
		return b
	}
	cache := os.Getenv("LANEWATCH_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "lanewatch")
	}
	return filepath.Join(cache, "bin", "influxd")
}

// Start starts an influxd on free loopback ports with data in tb.TempDir and
// stops it at cleanup. It skips the test when the binary is missing, or
// fails it when CI=true.
func Start(tb testing.TB) *Server { return StartWith(tb, Options{}) }

// StartWith is Start with options.
func StartWith(tb testing.TB, o Options) *Server {
	tb.Helper()
	bin := o.Bin
	if bin == "" {
		bin = needBinary(tb)
	} else {
		needFile(tb, bin)
	}
	s, err := start(bin, tb.TempDir(), o)
	if err != nil {
		tb.Fatalf("influxtest: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Errorf("influxtest: %v", err)
		}
	})
	return s
}

func needBinary(tb testing.TB) string {
	tb.Helper()
	bin := Binary()
	needFile(tb, bin)
	return bin
}

// needFile skips tb (fails it when CI=true) when bin does not exist.
func needFile(tb testing.TB, bin string) {
	tb.Helper()
	if _, err := os.Stat(bin); err != nil {
		missingtool.Skip(tb, "influxd", "scripts/influxd.sh build, or set INFLUXD_BIN", fmt.Sprintf("%s is not there; no InfluxDB 1.8 server to test against", bin))
	}
}

func start(bin, dir string, o Options) (*Server, error) {
	httpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	rpcPort, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{
		URL:     "http://" + httpPort,
		bin:     bin,
		dir:     dir,
		logPath: filepath.Join(dir, "influxd.log"),
	}
	s.env = append(os.Environ(),
		"INFLUXDB_HTTP_BIND_ADDRESS="+httpPort,
		"INFLUXDB_BIND_ADDRESS="+rpcPort,
		"INFLUXDB_HTTP_FLUX_ENABLED=true",
		fmt.Sprintf("INFLUXDB_HTTP_AUTH_ENABLED=%t", o.Auth),
		"INFLUXDB_HTTP_LOG_ENABLED=false",
		// A row limit as a production server may have: a read that is not
		// chunked comes back cut short ("partial": true).
		"INFLUXDB_HTTP_MAX_ROW_LIMIT="+fmt.Sprint(MaxRowLimit),
		"INFLUXDB_META_DIR="+filepath.Join(dir, "meta"),
		"INFLUXDB_DATA_DIR="+filepath.Join(dir, "data"),
		"INFLUXDB_DATA_WAL_DIR="+filepath.Join(dir, "wal"),
		"INFLUXDB_DATA_QUERY_LOG_ENABLED=false",
		"INFLUXDB_MONITOR_STORE_ENABLED=false",
		"INFLUXDB_REPORTING_DISABLED=true",
		"INFLUXDB_LOGGING_LEVEL=warn",
		"INFLUXDB_LOGGING_SUPPRESS_LOGO=true",
	)
	s.env = append(s.env, o.Env...) // the last of a repeated name wins
	if err := s.run(); err != nil {
		return nil, err
	}
	if o.Auth {
		s.User, s.Password = o.User, o.Password
		if s.User == "" {
			s.User = "admin"
		}
		if s.Password == "" {
			s.Password = "lanewatch-test-pw"
		}
		// With auth on and no user yet, 1.8 lets anyone create the first admin.
		q := fmt.Sprintf("CREATE USER %s WITH PASSWORD '%s' WITH ALL PRIVILEGES", quoteIdent(s.User), strings.ReplaceAll(s.Password, "'", `\'`))
		if err := s.Query(q); err != nil {
			_ = s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// MaxRowLimit is the servers' max-row-limit for non-chunked queries.
const MaxRowLimit = 1000

// run starts the process and waits for /ping.
func (s *Server) run() error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, "run", "-config", "/dev/null")
	cmd.Env = s.env
	cmd.Stdout, cmd.Stderr = logf, logf
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("influxd exited during start: %s", s.logTail())
		default:
		}
		if ping(s.URL) == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = s.Stop()
	return fmt.Errorf("influxd at %s did not answer /ping within 60s: %s", s.URL, s.logTail())
}

func ping(base string) error {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(base + "/ping")
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("ping: %s", resp.Status)
	}
	return nil
}

// Stop stops the server (SIGTERM, then SIGKILL after 15 s) and keeps its
// data, so Restart can bring it back. Stopping a stopped server is a no-op.
func (s *Server) Stop() error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return nil
	case <-time.After(15 * time.Second):
	}
	_ = cmd.Process.Kill()
	<-done
	return errors.New("influxd ignored SIGTERM for 15s; killed")
}

// Restart starts the server again on the same port and data folder.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	if err := s.Stop(); err != nil {
		tb.Fatalf("influxtest: %v", err)
	}
	if err := s.run(); err != nil {
		tb.Fatalf("influxtest: restart: %v", err)
	}
}

// CreateDB creates database name on the server (with the admin user when
// auth is on) and returns name.
func (s *Server) CreateDB(tb testing.TB, name string) string {
	tb.Helper()
	if err := s.Query("CREATE DATABASE " + quoteIdent(name)); err != nil {
		tb.Fatalf("influxtest: %v", err)
	}
	return name
}

// Query runs one InfluxQL statement through POST /query.
func (s *Server) Query(q string) error { return postQuery(s.URL, s.User, s.Password, q) }

func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// --- a server shared by one test binary -------------------------------------

var shared struct {
	once sync.Once
	srv  *Server
	dir  string
	err  error
}

// URL returns the base URL of an InfluxDB 1.8 server for tests that only need
// databases of their own: $INFLUX_URL when set (a server started by
// scripts/influxd.sh), else a server started on first use and shared by the
// whole test binary. A package that uses it should call Main from TestMain so
// that server is stopped at the end (a death signal stops it anyway if the
// test binary dies).
func URL(tb testing.TB) string {
	tb.Helper()
	if u := os.Getenv("INFLUX_URL"); u != "" {
		return strings.TrimSuffix(u, "/")
	}
	bin := needBinary(tb)
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "lanewatch-influxtest-")
		if shared.err == nil {
			shared.srv, shared.err = start(bin, shared.dir, Options{})
		}
	})
	if shared.err != nil {
		tb.Fatalf("influxtest: shared server: %v", shared.err)
	}
	return shared.srv.URL
}

// Main runs the tests and then stops the shared server, if URL started one:
//
//	func TestMain(m *testing.M) { influxtest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	StopShared()
	os.Exit(code)
}

// StopShared stops the server URL started, if any, and removes its data;
// for a TestMain that does more than Main.
func StopShared() {
	if shared.srv != nil {
		_ = shared.srv.Stop()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
}

var dbSeq atomic.Int64

// NewDB creates a fresh database on the server at base (no auth) with a name
// derived from the test's, drops it at cleanup, and returns its name.
func NewDB(tb testing.TB, base string) string {
	tb.Helper()
	name := fmt.Sprintf("t_%s_%d_%d", sanitize(tb.Name()), os.Getpid(), dbSeq.Add(1))
	if err := postQuery(base, "", "", "CREATE DATABASE "+quoteIdent(name)); err != nil {
		tb.Fatalf("influxtest: %v", err)
	}
	tb.Cleanup(func() {
		if err := postQuery(base, "", "", "DROP DATABASE "+quoteIdent(name)); err != nil && ping(base) == nil {
			tb.Errorf("influxtest: %v", err)
		}
	})
	return name
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_]+`)

func sanitize(s string) string {
	s = unsafeChars.ReplaceAllString(s, "_")
	if len(s) > 40 {
		s = s[len(s)-40:]
	}
	return s
}

func quoteIdent(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func postQuery(base, user, password, q string) error {
	form := url.Values{"q": {q}}
	req, err := http.NewRequest(http.MethodPost, base+"/query", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("query %q: %w", q, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), `"error"`) {
		return fmt.Errorf("query %q: %s: %s", q, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// freePort returns a loopback address nobody listens on right now.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr, nil
}
