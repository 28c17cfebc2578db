package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
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

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/redistest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
	"github.com/warcproxy/warcproxy/mitm"
)

// The test binary doubles as warcproxy: run with WARCPROXY_AS_MAIN=1 it is
// the command itself, so the tests exercise main's wiring, signals and exit
// codes as a user's shell would.
func TestMain(m *testing.M) {
	if os.Getenv("WARCPROXY_AS_MAIN") == "1" {
		os.Exit(realMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

type proc struct {
	cmd    *exec.Cmd
	port   string
	stderr *lockedBuffer
	exited chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// portRE finds the port in the start line, in the text or the JSON format.
var portRE = regexp.MustCompile(`"?msg"?[=:]"warcproxy listening".*[ ,]"?port"?[=:](\d+)`)

func startMain(t *testing.T, args ...string) *proc {
	t.Helper()
	cmd := selfCommand(t, args...)
	pr, pw := io.Pipe()
	p := &proc{cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = pw
	require.NoError(t, cmd.Start())
	portc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			_, _ = p.stderr.Write([]byte(line + "\n"))
			if m := portRE.FindStringSubmatch(line); m != nil {
				portc <- m[1]
			}
		}
	}()
	go func() { p.exited <- cmd.Wait(); pw.Close() }()
	select {
	case p.port = <-portc:
	case err := <-p.exited:
		t.Fatalf("warcproxy exited at start: %v\n%s", err, p.stderr.String())
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("warcproxy did not start:\n%s", p.stderr.String())
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return p
}

func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case err := <-p.exited:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		require.NoError(t, err)
		return 0
	case <-time.After(timeout):
		t.Fatalf("warcproxy did not exit within %s:\n%s", timeout, p.stderr.String())
		return -1
	}
}

// selfCommand runs this test binary as warcproxy, in a temporary working
// directory, so that defaults relative to it (./warcproxy.db, ./warcs)
// never land in the source tree.
func selfCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	self, err := filepath.Abs(os.Args[0])
	require.NoError(t, err)
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), "WARCPROXY_AS_MAIN=1")
	cmd.Dir = t.TempDir()
	return cmd
}

func runMain(t *testing.T, args ...string) (int, string) {
	cmd := selfCommand(t, args...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err)
	return 0, string(out)
}

func TestExitCodes(t *testing.T) {
	code, out := runMain(t, "--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "--max-conns")
	code, out = runMain(t, "--no-such-flag")
	require.Equal(t, 2, code, out)
	code, out = runMain(t, "--warc-version", "2.0")
	require.Equal(t, 2, code, out)
	code, out = runMain(t, "--version")
	require.Equal(t, 0, code)
	require.True(t, strings.HasPrefix(out, "warcproxy "), out)
	// A port that is taken is a runtime failure, found before anything
	// is created: no CA, WARC directory or database.
	busy := httptest.NewServer(http.NotFoundHandler())
	defer busy.Close()
	u, _ := url.Parse(busy.URL)
	for _, args := range [][]string{
		{"--port", u.Port()},
		{"--port", "0", "--metrics-address", u.Host},
	} {
		cmd := selfCommand(t, args...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s", out)
		require.Equal(t, 1, ee.ExitCode(), "%s", out)
		require.Contains(t, string(out), "address already in use")
		entries, err := os.ReadDir(cmd.Dir)
		require.NoError(t, err)
		require.Empty(t, entries, "nothing created: %s", out)
	}
}

// TestSIGTERMUnderLoad: SIGTERM while clients are fetching; the process
// exits 0 and every exchange a client saw complete is in a closed WARC.
func TestSIGTERMUnderLoad(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		fmt.Fprintf(w, "body of %s", r.URL.Path)
	}))
	defer origin.Close()
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	p := startMain(t, "--port", "0", "--dir", warcs, "--cacert", filepath.Join(dir, "ca.pem"), "--writer-workers", "2")
	proxyURL, _ := url.Parse("http://127.0.0.1:" + p.port)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), MaxIdleConnsPerHost: 64}, Timeout: 20 * time.Second}

	var mu sync.Mutex
	completed := map[string]bool{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for c := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				u := fmt.Sprintf("%s/c%d/%d", origin.URL, c, i)
				resp, err := client.Get(u)
				if err != nil {
					continue // refused once the proxy stops accepting
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode == 200 && string(body) == "body of "+strings.TrimPrefix(u, origin.URL) {
					mu.Lock()
					completed[u] = true
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	code := p.wait(t, 30*time.Second)
	close(stop)
	wg.Wait()
	require.Equal(t, 0, code, p.stderr.String())
	require.Contains(t, p.stderr.String(), "shutdown complete")

	recs := warccheck.Dir(t, warcs)
	archived := map[string]bool{}
	for _, r := range recs {
		if r.Type == "response" || r.Type == "revisit" {
			archived[r.TargetURI] = true
		}
	}
	require.Greater(t, len(completed), 100, "the load ran")
	for u := range completed {
		require.True(t, archived[u], "answered but not archived: %s", u)
	}
}

// TestSIGTERMWith1000InFlight: SIGTERM while 1,000 requests are in flight
// (each origin answer takes a second): the proxy stops accepting, lets them
// finish, and every exchange a client saw complete is in a closed WARC.
func TestSIGTERMWith1000InFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 connections")
	}
	const n = 1000
	var inOrigin atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inOrigin.Add(1)
		time.Sleep(time.Second)
		fmt.Fprintf(w, "body of %s", r.URL.Path)
	}))
	defer origin.Close()
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	p := startMain(t, "--port", "0", "--dir", warcs, "--cacert", filepath.Join(dir, "ca.pem"), "--max-conns", "1100")
	proxyURL, _ := url.Parse("http://127.0.0.1:" + p.port)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), MaxIdleConnsPerHost: n}, Timeout: 60 * time.Second}
	defer client.CloseIdleConnections()

	var mu sync.Mutex
	completed := map[string]bool{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := fmt.Sprintf("%s/r%d", origin.URL, i)
			resp, err := client.Get(u)
			if err != nil {
				return
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == 200 && string(body) == fmt.Sprintf("body of /r%d", i) {
				mu.Lock()
				completed[u] = true
				mu.Unlock()
			}
		}()
	}
	require.Eventually(t, func() bool { return inOrigin.Load() >= n*9/10 }, 30*time.Second, 10*time.Millisecond,
		"requests in flight through the proxy")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	code := p.wait(t, 60*time.Second)
	wg.Wait()
	require.Equal(t, 0, code, p.stderr.String())
	require.GreaterOrEqual(t, len(completed), n*9/10, "the in-flight requests were allowed to finish")

	archived := map[string]bool{}
	for _, r := range warccheck.Dir(t, warcs) {
		if r.Type == "response" {
			archived[r.TargetURI] = true
		}
	}
	for u := range completed {
		require.True(t, archived[u], "answered but not archived: %s", u)
	}
	open, _ := filepath.Glob(filepath.Join(warcs, "*.open"))
	require.Empty(t, open, "every WARC closed")
}

// TestSecondSignalForcesExit: a second signal during a shutdown that
// cannot finish (an origin trickling a body, a 60 s budget) ends the budget
// at once: the process exits 1 promptly, and what it leaves holds only
// whole records.
func TestSecondSignalForcesExit(t *testing.T) {
	stop := make(chan struct{})
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/quick" {
			fmt.Fprint(w, "quick")
			return
		}
		w.Header().Set("Content-Length", "100000000")
		for {
			if _, err := io.WriteString(w, strings.Repeat("t", 1000)); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}))
	defer origin.Close()
	defer close(stop)
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	p := startMain(t, "--port", "0", "--dir", warcs, "--cacert", filepath.Join(dir, "ca.pem"), "--shutdown-timeout", "60s")
	proxyURL, _ := url.Parse("http://127.0.0.1:" + p.port)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
	defer client.CloseIdleConnections()
	resp, err := client.Get(origin.URL + "/quick")
	require.NoError(t, err)
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	for range 5 {
		go func() {
			resp, err := client.Get(origin.URL + "/trickle")
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	require.Eventually(t, func() bool { return activeRequests(t, p.port) == 5 }, 10*time.Second, 20*time.Millisecond,
		"the trickles are flowing")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	code := p.wait(t, 10*time.Second)
	require.Less(t, time.Since(start), 5*time.Second, "a forced shutdown does not wait for the budget")
	require.Equal(t, 1, code, "an incomplete shutdown is not a success")
	log := p.stderr.String()
	require.Regexp(t, `[1-5] exchanges? in flight cut \(second signal\): their partial responses go to the writer`, log)
	require.NotContains(t, log, "deadline", "a second signal is not a deadline")

	files, _ := filepath.Glob(filepath.Join(warcs, "*.warc.gz*"))
	require.NotEmpty(t, files)
	recs := warccheck.Files(t, files...) // whole records only, .open files included
	found := false
	for _, r := range recs {
		if r.TargetURI == origin.URL+"/quick" && r.Type == "response" {
			found = true
		}
	}
	require.True(t, found, "what was answered before the signals is on disk")
}

// TestSecondSignalWithNothingLeftExits0: two signals at once (as `kill
// -TERM; kill -INT`, or `timeout` sending its own) to a proxy with nothing
// in flight: nothing is cut or lost, so the stop is a clean one, exit 0,
// and the log says that the second signal found nothing to cut, without
// false alarms. Tried a few times: the components saw the forced end in
// a random order.
func TestSecondSignalWithNothingLeftExits0(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "quick")
	}))
	defer origin.Close()
	for try := range 4 {
		dir := t.TempDir()
		warcs := filepath.Join(dir, "warcs")
		p := startMain(t, "--port", "0", "--dir", warcs, "--cacert", filepath.Join(dir, "ca.pem"), "--cdxj")
		if try%2 == 1 { // with a WARC file open, once dedup and stats have flushed
			proxyURL, _ := url.Parse("http://127.0.0.1:" + p.port)
			client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
			resp, err := client.Get(origin.URL + "/page")
			require.NoError(t, err)
			_, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			client.CloseIdleConnections()
			require.Eventually(t, func() bool { return storesFlushed(t, p.port) }, 10*time.Second, 20*time.Millisecond)
		}
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
		code := p.wait(t, 10*time.Second)
		log := p.stderr.String()
		require.Equal(t, 0, code, "try %d: nothing was lost:\n%s", try, log)
		// "shutdown complete: the second signal came when nothing was left
		// to cut", or the plain line when the stop was over before the
		// second signal was seen.
		require.Contains(t, log, "shutdown complete")
		for _, alarm := range []string{"shutdown incomplete", "in flight", "waiting for lookups", "context canceled"} {
			require.NotContains(t, log, alarm)
		}
		open, _ := filepath.Glob(filepath.Join(warcs, "*.open"))
		require.Empty(t, open, "every WARC closed")
		if try%2 == 1 {
			found := false
			for _, r := range warccheck.Dir(t, warcs) {
				found = found || r.TargetURI == origin.URL+"/page"
			}
			require.True(t, found, "the capture is in a closed WARC")
			indexes, _ := filepath.Glob(filepath.Join(warcs, "*.cdxj"))
			require.NotEmpty(t, indexes, "and indexed (--cdxj), though the second signal came")
		}
	}
}

// TestSIGTERMKeepsTheOperatorsDirs: a clean stop leaves an empty
// --tmp-dir the operator made (systemd's ReadWritePaths= needs it for the
// next start), and removes the empty ones the proxy made for itself.
func TestSIGTERMKeepsTheOperatorsDirs(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool")
	require.NoError(t, os.Mkdir(spool, 0o700))
	for _, tc := range []struct {
		name       string
		tmpDir     string
		kept, gone string
	}{
		{"existing --tmp-dir", spool, spool, ""},
		{"--tmp-dir it made", filepath.Join(dir, "made", "spool"), dir, filepath.Join(dir, "made")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startMain(t, "--port", "0", "--dir", filepath.Join(dir, "warcs"), "--tmp-dir", tc.tmpDir,
				"--cacert", filepath.Join(dir, "ca.pem"), "--dedup-db", "embedded:"+filepath.Join(dir, "warcproxy.db"))
			require.DirExists(t, tc.tmpDir)
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
			require.Equal(t, 0, p.wait(t, 10*time.Second), p.stderr.String())
			require.DirExists(t, tc.kept)
			if tc.gone != "" {
				require.NoDirExists(t, tc.gone)
			}
		})
	}
}

// activeRequests is /status's active_requests.
func activeRequests(t *testing.T, port string) float64 {
	var st struct {
		Active float64 `json:"active_requests"`
	}
	getStatus(t, port, &st)
	return st.Active
}

// storesFlushed reports, from /status, whether the proxy has written its
// captures and stored its dedup saves and stats counts.
func storesFlushed(t *testing.T, port string) bool {
	var st struct {
		CapturesPending int `json:"captures_pending"`
		Dedup           struct {
			PendingSaves int `json:"pending_saves"`
		} `json:"dedup"`
		Stats struct {
			BucketsUnflushed int `json:"buckets_unflushed"`
		} `json:"stats"`
	}
	getStatus(t, port, &st)
	return st.CapturesPending == 0 && st.Dedup.PendingSaves == 0 && st.Stats.BucketsUnflushed == 0
}

// getStatus decodes the proxy's /status into st.
func getStatus(t *testing.T, port string, st any) {
	resp, err := http.Get("http://127.0.0.1:" + port + "/status")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.NoError(t, json.NewDecoder(resp.Body).Decode(st))
}

// TestConfigErrorsExit2BeforeAnything: a configuration the proxy cannot
// run with exits 2 with a message naming the flag, and creates nothing:
// no CA, database, WARC directory or spool. Each case runs in a fresh
// directory holding only the files it prepares.
func TestConfigErrorsExit2BeforeAnything(t *testing.T) {
	caPEM, caCRT := newCAFiles(t)
	for _, tc := range []exit2Case{
		{"auth file missing", nil, []string{"--proxy-auth-file", "auth"}, []string{"--proxy-auth-file", "no such file"}, nil},
		{"auth file malformed", map[string]string{"auth": "# users\nalice-no-colon\n"}, []string{"--proxy-auth-file", "auth"},
			[]string{"--proxy-auth-file", "line 2: want user:password"}, nil},
		{"auth file empty", map[string]string{"auth": "# nobody yet\n\n"}, []string{"--proxy-auth-file", "auth"},
			[]string{"--proxy-auth-file", "no user:password lines"}, nil},
		{"CA file that does not parse", map[string]string{"ca.pem": "not a certificate\n"}, nil,
			[]string{"--cacert: CA file ca.pem: need a PEM certificate and private key"}, []string{"chmod"}},
		{"CA file that is not PEM, readable by others", map[string]string{"notpem.txt": "hello\n"}, []string{"--cacert", "notpem.txt"},
			[]string{"--cacert: CA file notpem.txt: need a PEM certificate and private key"}, []string{"chmod", "private key but"}},
		{"a system file as the CA file", nil, []string{"--cacert", "/etc/passwd"},
			[]string{"CA file /etc/passwd: need a PEM certificate and private key"}, []string{"chmod"}},
		{"the clients' copy as the CA file", map[string]string{"warcproxy-ca.pem": caPEM, "warcproxy-ca.crt": caCRT}, []string{"-c", "warcproxy-ca.crt"},
			[]string{"CA file warcproxy-ca.crt: need a PEM certificate and private key", "no private key, as the copy written for clients",
				"--cacert warcproxy-ca.pem"}, []string{"chmod", "private key but"}},
		{"the clients' copy alone", map[string]string{"warcproxy-ca.crt": caCRT}, []string{"-c", "warcproxy-ca.crt"},
			[]string{"no private key, as the copy written for clients"}, []string{"chmod", "--cacert warcproxy-ca.pem"}},
		{"CA key readable by others", map[string]string{"ca.pem": caPEM}, nil,
			[]string{"CA file ca.pem holds the CA's private key but is readable by group or others", "chmod 600 ca.pem"}, nil},
		{"WARC dir is a file", map[string]string{"warcs": "oops\n"}, nil, []string{"--dir", "not a directory"}, nil},
		// Each of these was found only when it was created, after the CA
		// (and with --crawl-log-dir, the WARC directory and the database).
		{"WARC dir inside a file", map[string]string{"data": "oops\n"}, []string{"--dir", "data/warcs"},
			[]string{"--dir: cannot create data/warcs: data is not a directory"}, nil},
		{"spool dir inside a file", map[string]string{"data": "oops\n"}, []string{"--tmp-dir", "data/spool"},
			[]string{"--tmp-dir: cannot create data/spool: data is not a directory"}, nil},
		{"certs dir inside a file", map[string]string{"data": "oops\n"}, []string{"--certs-dir", "data/certs"},
			[]string{"--certs-dir: cannot create data/certs: data is not a directory"}, nil},
		{"crawl log dir inside a file", map[string]string{"data": "oops\n"}, []string{"--crawl-log-dir", "data/log"},
			[]string{"--crawl-log-dir: cannot create data/log: data is not a directory"}, nil},
		{"database inside a file", map[string]string{"data": "oops\n"}, []string{"--stats-db", "embedded:data/stats.db"},
			[]string{"--stats-db: cannot create data/stats.db: data is not a directory"}, nil},
		{"database is a directory", nil, []string{"--dedup-db", "embedded:."}, []string{"--dedup-db: . is a directory"}, nil},
		{"CA file inside a file", map[string]string{"data": "oops\n"}, []string{"--cacert", "data/ca.pem"},
			[]string{"--cacert", "data/ca.pem: not a directory"}, nil},
		// Root passes the access check under /proc and /sys, and failed
		// only when creating, after the CA and database were made.
		{"WARC dir under /proc", nil, []string{"--dir", "/proc/warcs"},
			[]string{"--dir: cannot create /proc/warcs: /proc is on proc, a kernel file system"}, nil},
		{"WARC dir under /sys", nil, []string{"--dir", "/sys/warcs"},
			[]string{"--dir: cannot create /sys/warcs: /sys is on sysfs, a kernel file system"}, nil},
		{"spool dir under /sys", nil, []string{"--tmp-dir", "/sys/kernel/spool"},
			[]string{"--tmp-dir: cannot create /sys/kernel/spool: /sys/kernel is on sysfs"}, nil},
		{"certs dir under /proc", nil, []string{"--certs-dir", "/proc/certs"}, []string{"--certs-dir: cannot create /proc/certs"}, nil},
		{"crawl log dir under /proc", nil, []string{"--crawl-log-dir", "/proc/cl"},
			[]string{"--crawl-log-dir: cannot create /proc/cl: /proc is on proc"}, nil},
		{"CA file under /proc", nil, []string{"--cacert", "/proc/x/ca.pem"},
			[]string{"--cacert: cannot create /proc/x/ca.pem: /proc is on proc"}, nil},
		{"database under /proc", nil, []string{"--dedup-db", "embedded:/proc/x.db"},
			[]string{"--dedup-db: cannot create /proc/x.db: /proc is on proc"}, nil},
		{"stats database under /sys", nil, []string{"--stats-db", "embedded:/sys/x/stats.db"},
			[]string{"--stats-db: cannot create /sys/x/stats.db: /sys is on sysfs"}, nil},
		{"auth file under /proc", nil, []string{"--proxy-auth-file", "/proc/x/auth"}, []string{"--proxy-auth-file", "no such file"}, nil},
		{"zstd dictionary under /proc", nil, []string{"--compression", "zstd", "--zstd-dictionary", "/proc/x/warc.dict"},
			[]string{"--zstd-dictionary", "no such file"}, nil},
		// Not "address already in use", as if another process held it.
		{"metrics on the proxy port", nil, []string{"--port", "8051", "--metrics-address", "127.0.0.1:8051"},
			[]string{"--address 127.0.0.1 --port 8051 and --metrics-address 127.0.0.1:8051 would both listen on port 8051"}, []string{"already in use"}},
		{"jobs file missing", nil, []string{"--jobs", "jobs.yaml"}, []string{"--jobs: reading jobs file", "no such file"}, nil},
		{"jobs file with an unknown key", map[string]string{"jobs.yaml": "jobs:\n  - name: a\n    pasword: x\n"}, []string{"--jobs", "jobs.yaml"},
			[]string{"--jobs: jobs file jobs.yaml", "field pasword not found"}, nil},
		{"a job on the proxy port", map[string]string{"jobs.yaml": "jobs:\n  - name: a\n    port: 8052\n"}, []string{"--port", "8052", "--jobs", "jobs.yaml"},
			[]string{`--address 127.0.0.1 --port 8052 and job "a" (port 8052 on --address 127.0.0.1) would both listen on port 8052`}, []string{"already in use"}},
		{"a job without a password with --proxy-auth", map[string]string{"jobs.yaml": "jobs:\n  - name: a\n"}, []string{"--proxy-auth", "u:p", "--jobs", "jobs.yaml"},
			[]string{`job "a" has no password, which --proxy-auth requires`}, nil},
		{"a job that is also a proxy user", map[string]string{"jobs.yaml": "jobs:\n  - name: u\n    password: x\n"}, []string{"--proxy-auth", "u:p", "--jobs", "jobs.yaml"},
			[]string{`job "u" is also a --proxy-auth user`}, nil},
		{"Redis port out of range", nil, []string{"--dedup-db", "redis://127.0.0.1:99999/0"}, []string{"--dedup-db", "port"}, nil},
		{"store timeout zero", nil, []string{"--store-timeout", "0s"}, []string{"--store-timeout"}, nil},
		{"SOCKS and parent proxy together", nil, []string{"--socks-proxy", "127.0.0.1:1080", "--upstream-proxy", "http://127.0.0.1:3128"},
			[]string{"--socks-proxy", "--upstream-proxy"}, nil},
		{"SOCKS password over RFC 1929's 255 bytes, in the file", map[string]string{"warcproxy.yaml": "socks-proxy: 127.0.0.1:1080\nsocks-proxy-username: crawler\nsocks-proxy-password: " + strings.Repeat("p", 256) + "\n"},
			[]string{"--config.file", "warcproxy.yaml"}, []string{"--socks-proxy-password: is 256 bytes long: SOCKS5 allows at most 255"}, nil},
		{"parent proxy not http", nil, []string{"--upstream-proxy", "https://127.0.0.1:3128"}, []string{"--upstream-proxy", "only http://"}, nil},
		{"parent proxy without port", nil, []string{"--upstream-proxy", "http://u:s3cret-pw@127.0.0.1"},
			[]string{"--upstream-proxy: no port"}, []string{"s3cret-pw"}},
		{"parent proxy with a path", nil, []string{"--upstream-proxy", "http://u:s3cret-pw@127.0.0.1:8888/path"},
			[]string{"--upstream-proxy: a path is not allowed"}, []string{"s3cret-pw"}},
		{"SOCKS password without SOCKS", nil, []string{"--socks-proxy-password", "s3cret-pw"},
			[]string{"--socks-proxy-password: needs --socks-proxy"}, []string{"s3cret-pw", "username"}},
		{"warcprox's --rethinkdb-dedup-url", nil, []string{"--rethinkdb-dedup-url", "rethinkdb://db0/warcprox/dedup"},
			[]string{"unknown flag --rethinkdb-dedup-url", "--dedup-db and --stats-db redis://"}, nil},
		{"warcprox's --plugin", nil, []string{"--plugin", "myplugin.Plugin"}, []string{"-plugin", "crawl log (--crawl-log-dir)"}, nil},
		{"--gzip=false with --compression zstd", nil, []string{"--gzip=false", "--compression", "zstd"},
			[]string{"--gzip=false asks for no compression and --compression zstd", "give --compression alone"}, nil},
		{"--gzip-level with --compression zstd", nil, []string{"--compression", "zstd", "--gzip-level", "9"},
			[]string{"--gzip-level: is for --compression gzip", "--zstd-level"}, nil},
		{"zstd dictionary missing", nil, []string{"--compression", "zstd", "--zstd-dictionary", "warc.dict"},
			[]string{"--zstd-dictionary", "no such file"}, nil},
		{"zstd dictionary not a dictionary", map[string]string{"warc.dict": "WARC/1.0\r\n"}, []string{"--compression", "zstd", "--zstd-dictionary", "warc.dict"},
			[]string{"--zstd-dictionary: warc.dict: not a zstd dictionary"}, nil},
		{"warcprox's --rethinkdb-dedup-url in the file", map[string]string{"warcproxy.yaml": "rethinkdb-dedup-url: rethinkdb://db0/warcprox/dedup\n"},
			[]string{"--config.file", "warcproxy.yaml"}, []string{`unknown key "rethinkdb-dedup-url"`, "--dedup-db and --stats-db redis://"}, nil},
	} {
		t.Run(tc.name, tc.run)
	}
}

// TestStoreServerErrorsExit2BeforeAnything: a Redis server that refuses
// the connection's setup (every lookup would fail for as long as the
// proxy ran) is a configuration error too, found before anything is
// created.
func TestStoreServerErrorsExit2BeforeAnything(t *testing.T) {
	redisAddr := redistest.Addr(t)
	locked := redistest.Private(t) // a server with a password
	rc := redis.NewClient(&redis.Options{Addr: locked.Addr})
	require.NoError(t, rc.ConfigSet(t.Context(), "requirepass", "right-pw").Err())
	rc.Close()
	for _, tc := range []exit2Case{
		{"a database number the Redis server does not have", nil, []string{"--dedup-db", "redis://" + redisAddr + "/99"},
			[]string{"--dedup-db: redis://" + redisAddr + "/99: the Redis server refused the connection", "DB index is out of range"}, nil},
		{"a Redis password the server does not take", nil, []string{"--stats-db", "redis://:s3cret-pw@" + locked.Addr + "/0"},
			[]string{"--stats-db: redis://", "the Redis server refused the connection", "WRONGPASS"}, []string{"s3cret-pw"}},
		{"no Redis password for a server that wants one", nil, []string{"--dedup-db", "redis://" + locked.Addr + "/0"},
			[]string{"--dedup-db: redis://" + locked.Addr + "/0: the Redis server refused the connection", "NOAUTH"}, nil},
	} {
		t.Run(tc.name, tc.run)
	}
}

// exit2Case is a command line that must exit 2 with a message naming
// what is wrong, leaving its working directory as it was prepared.
type exit2Case struct {
	name    string
	files   map[string]string // prepared in the directory, mode 0644
	args    []string
	want    []string // in the message
	notWant []string // not in the message
}

func (tc exit2Case) run(t *testing.T) {
	cmd := selfCommand(t, append([]string{"--port", "0", "--dir", "warcs", "--cacert", "ca.pem",
		"--dedup-db", "embedded:warcproxy.db"}, tc.args...)...)
	for name, content := range tc.files {
		path := filepath.Join(cmd.Dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
		require.NoError(t, os.Chmod(path, 0o644)) // whatever the umask
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	require.Equal(t, 2, ee.ExitCode(), "%s", out)
	for _, w := range tc.want {
		require.Contains(t, string(out), w)
	}
	for _, w := range tc.notWant {
		require.NotContains(t, string(out), w)
	}
	entries, err := os.ReadDir(cmd.Dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	var prepared []string
	for name := range tc.files {
		prepared = append(prepared, name)
	}
	require.ElementsMatch(t, prepared, names, "nothing created")
}

// newCAFiles returns the contents of a CA file (certificate and key) and
// of its certificate-only copy for clients, as the proxy writes them.
func newCAFiles(t *testing.T) (caPEM, caCRT string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	_, err := mitm.LoadOrCreateCA(path, "", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	pemData, err := os.ReadFile(path)
	require.NoError(t, err)
	crtData, err := os.ReadFile(mitm.CertOnlyPath(path))
	require.NoError(t, err)
	return string(pemData), string(crtData)
}

// SIGHUP does not stop the proxy (by default it would end the process):
// it says so and goes on serving; SIGTERM still stops it cleanly.
func TestSIGHUPDoesNotStopTheProxy(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer origin.Close()
	p := startMain(t, "--port", "0", "--dir", "warcs")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	require.Eventually(t, func() bool { return strings.Contains(p.stderr.String(), "SIGHUP received: nothing to reload") },
		5*time.Second, 10*time.Millisecond)
	require.True(t, get(proxyClient(p.port), origin.URL+"/after-hup", ""), "still serving")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, 30*time.Second), p.stderr.String())
}
