package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
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

var portRE = regexp.MustCompile(`msg="warcproxy listening".* port=(\d+)`)

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
	// A port that is taken is a runtime failure.
	busy := httptest.NewServer(http.NotFoundHandler())
	defer busy.Close()
	u, _ := url.Parse(busy.URL)
	dir := t.TempDir()
	code, out = runMain(t, "--port", u.Port(), "--dir", dir, "--cacert", filepath.Join(dir, "ca.pem"))
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "address already in use")
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
