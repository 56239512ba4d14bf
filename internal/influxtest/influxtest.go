// Package influxtest runs real InfluxDB 1.8 servers (influxd processes on
// loopback) for tests: one per test with Start, or one shared by a test
// binary with URL. TESTING.md says where the binary comes from and when a
// missing one skips or fails.
package influxtest

import (
	"cmp"
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
	"slices"
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
	Auth     bool     // HTTP authentication on, with the user admin: the stores' token is "admin:PASSWORD"
	Password string   // admin's password; "": lanewatch-test-pw
	Bin      string   // influxd to run instead of the default (scripts/influxd.sh build VERSION); missing, the test skips
	Env      []string // INFLUXDB_* settings over the defaults, e.g. "INFLUXDB_COORDINATOR_MAX_SELECT_POINT=500"
}

// MaxRowLimit is the servers' max-row-limit for non-chunked queries: a read
// that is not chunked comes back cut short ("partial": true).
const MaxRowLimit = 1000

// Server is one influxd process with its own data folder and ports.
type Server struct {
	URL string // http://127.0.0.1:PORT

	password     string // admin's, when started with Auth
	bin, logPath string
	env          []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Start starts an influxd on free loopback ports with data in tb.TempDir and
// stops it at cleanup.
func Start(tb testing.TB) *Server { return StartWith(tb, Options{}) }

// StartWith is Start with options.
func StartWith(tb testing.TB, o Options) *Server {
	tb.Helper()
	s, err := start(binary(tb, o.Bin), tb.TempDir(), o)
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

// binary returns bin, or the default binary when bin is "", and skips tb
// when it is not there.
func binary(tb testing.TB, bin string) string {
	tb.Helper()
	if bin = cmp.Or(bin, os.Getenv("INFLUXD_BIN")); bin == "" {
		home, _ := os.UserHomeDir()
		bin = filepath.Join(cmp.Or(os.Getenv("LANEWATCH_CACHE"), filepath.Join(home, ".cache", "lanewatch")), "bin", "influxd")
	}
	if _, err := os.Stat(bin); err != nil {
		missingtool.Skip(tb, "influxd", "scripts/influxd.sh build, or set INFLUXD_BIN", fmt.Sprintf("%s is not there; no InfluxDB 1.8 server to test against", bin))
	}
	return bin
}

func start(bin, dir string, o Options) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("find a free port: %w", err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	s := &Server{URL: "http://" + addr, bin: bin, logPath: filepath.Join(dir, "influxd.log")}
	s.env = slices.Concat(os.Environ(), []string{"INFLUXDB_HTTP_BIND_ADDRESS=" + addr, "INFLUXDB_BIND_ADDRESS=127.0.0.1:0",
		fmt.Sprintf("INFLUXDB_HTTP_AUTH_ENABLED=%t", o.Auth),
		"INFLUXDB_HTTP_MAX_ROW_LIMIT=" + fmt.Sprint(MaxRowLimit), "INFLUXDB_HTTP_LOG_ENABLED=false",
		"INFLUXDB_META_DIR=" + filepath.Join(dir, "meta"), "INFLUXDB_DATA_DIR=" + filepath.Join(dir, "data"),
		"INFLUXDB_DATA_WAL_DIR=" + filepath.Join(dir, "wal"), "INFLUXDB_DATA_QUERY_LOG_ENABLED=false",
		"INFLUXDB_MONITOR_STORE_ENABLED=false", "INFLUXDB_REPORTING_DISABLED=true",
		"INFLUXDB_LOGGING_LEVEL=warn", "INFLUXDB_LOGGING_SUPPRESS_LOGO=true", "INFLUXDB_COORDINATOR_WRITE_TIMEOUT=60s"}, o.Env) // the last of a repeated name wins
	if err := s.run(); err != nil {
		return nil, err
	}
	if o.Auth {
		s.password = cmp.Or(o.Password, "lanewatch-test-pw")
		// With auth on and no user yet, 1.8 lets anyone create the first admin.
		if err := s.Query(fmt.Sprintf("CREATE USER admin WITH PASSWORD '%s' WITH ALL PRIVILEGES", strings.ReplaceAll(s.password, "'", `\'`))); err != nil {
			_ = s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// run starts the process and waits for /ping.
func (s *Server) run() error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, "run", "-config", "/dev/null")
	cmd.Env, cmd.Stdout, cmd.Stderr = s.env, logf, logf
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
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case <-done:
			return fmt.Errorf("influxd exited during start: %s", s.logTail())
		default:
		}
		if ping(s.URL) == nil {
			return nil
		}
	}
	_ = s.Stop()
	return fmt.Errorf("influxd at %s did not answer /ping within 60s: %s", s.URL, s.logTail())
}

func ping(base string) error {
	resp, err := (&http.Client{Timeout: time.Second}).Get(base + "/ping")
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

// CreateDB creates database name on the server (Query) and returns name.
func (s *Server) CreateDB(tb testing.TB, name string) string {
	tb.Helper()
	if err := s.Query("CREATE DATABASE " + quoteIdent(name)); err != nil {
		tb.Fatalf("influxtest: %v", err)
	}
	return name
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	return strings.TrimSpace(string(b[max(0, len(b)-2000):]))
}

var shared struct {
	once sync.Once
	srv  *Server
	dir  string
	err  error
}

// URL returns the base URL of an InfluxDB 1.8 server for tests that only need
// databases of their own: $INFLUX_URL when set, else a server started on
// first use and shared by the whole test binary, which Main stops.
func URL(tb testing.TB) string {
	tb.Helper()
	if u := os.Getenv("INFLUX_URL"); u != "" {
		return strings.TrimSuffix(u, "/")
	}
	bin := binary(tb, "")
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "lanewatch-influxtest-"); shared.err == nil {
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

// StopShared is Main's end, for a TestMain that does more than Main.
func StopShared() {
	if shared.srv != nil {
		_ = shared.srv.Stop()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
}

var dbSeq atomic.Int64

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// NewDB creates a fresh database on the server at base (no auth) with a name
// derived from the test's, drops it at cleanup, and returns its name.
func NewDB(tb testing.TB, base string) string {
	tb.Helper()
	name := unsafeChars.ReplaceAllString(tb.Name(), "_")
	srv := &Server{URL: base}
	name = srv.CreateDB(tb, fmt.Sprintf("t_%s_%d_%d", name[max(0, len(name)-40):], os.Getpid(), dbSeq.Add(1)))
	tb.Cleanup(func() {
		if err := srv.Query("DROP DATABASE " + quoteIdent(name)); err != nil && ping(base) == nil {
			tb.Errorf("influxtest: %v", err)
		}
	})
	return name
}

func quoteIdent(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// Query runs one InfluxQL statement through POST /query, as admin when the
// server was started with Auth.
func (s *Server) Query(q string) error {
	req, err := http.NewRequest(http.MethodPost, s.URL+"/query", strings.NewReader(url.Values{"q": {q}}.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if s.password != "" {
		req.SetBasicAuth("admin", s.password)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
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

// StartNewer is StartWith on the newer InfluxDB 1.x of $INFLUXD_BIN_NEWER
// (scripts/influxd.sh build 1.13.2): built without its Rust libflux, so
// only InfluxQL and the writes run, Flux off. Unset, tb skips as for a
// missing tool (fails under CI=true).
func StartNewer(tb testing.TB, o Options) *Server {
	tb.Helper()
	bin := os.Getenv("INFLUXD_BIN_NEWER")
	if bin == "" {
		missingtool.Skip(tb, "influxd 1.13.2", "scripts/influxd.sh build 1.13.2, then INFLUXD_BIN_NEWER=~/.cache/lanewatch/bin/influxd-1.13.2",
			"INFLUXD_BIN_NEWER is not set; no InfluxDB newer than 1.8 to test against")
	}
	if _, err := os.Stat(bin); err != nil {
		missingtool.Skip(tb, "influxd 1.13.2", "scripts/influxd.sh build 1.13.2", fmt.Sprintf("INFLUXD_BIN_NEWER=%s is not there", bin))
	}
	o.Bin, o.Env = bin, append(o.Env, "INFLUXDB_HTTP_FLUX_ENABLED=false")
	srv := StartWith(tb, o)
	resp, err := http.Get(srv.URL + "/ping")
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	if v := resp.Header.Get("X-Influxdb-Version"); v == "" || strings.HasPrefix(v, "1.8.") {
		tb.Fatalf("%s answers as InfluxDB %q; want a release newer than 1.8", bin, v)
	}
	return srv
}
