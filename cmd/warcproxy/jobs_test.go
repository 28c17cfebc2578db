package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/gobuild"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// viaProxy is a client of the proxy at 127.0.0.1:port with user's
// credentials (none when user is ""); keepAlive false makes each request
// a new connection.
func viaProxy(port int, user string, keepAlive bool) *http.Client {
	u := &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", port)}
	if user != "" {
		u.User = url.UserPassword(user, "pw")
	}
	return &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyURL(u), DisableKeepAlives: !keepAlive},
		Timeout:   20 * time.Second,
	}
}

// waitLog waits until the proxy's log holds want, after the first
// `after` bytes.
func waitLog(t *testing.T, p *proc, after int, want string) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(p.stderr.String()[after:], want) },
		10*time.Second, 10*time.Millisecond, "log never said %q:\n%s", want, p.stderr.String())
}

// TestJobsReloadOnSIGHUP: SIGHUP under load (a running warcbench run
// with a job's credentials, one connection per request) loses no request;
// new connections go by the new table (a changed prefix, a port moved, a
// job added) while a connection open before keeps its job; a file that
// does not load, or a port taken, keeps the table in force, logged and
// counted.
func TestJobsReloadOnSIGHUP(t *testing.T) {
	warcbench, cleanup, err := gobuild.Binary("github.com/warcproxy/warcproxy/cmd/warcbench")
	require.NoError(t, err)
	defer cleanup()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer origin.Close()

	oldPort, newPort := freePort(t), freePort(t)
	jobsFile := filepath.Join(t.TempDir(), "jobs.yaml")
	writeJobs := func(content string) { require.NoError(t, os.WriteFile(jobsFile, []byte(content), 0o600)) }
	writeJobs(fmt.Sprintf("jobs:\n  - name: jobA\n    password: pw\n    warcprox-meta: {warc-prefix: before}\n"+
		"  - name: ported\n    port: %d\n    warcprox-meta: {warc-prefix: ported-old}\n", oldPort))
	p := startMain(t, "--port", "0", "--dir", "warcs", "--jobs", jobsFile)
	mainPort := 0
	_, _ = fmt.Sscan(p.port, &mainPort)

	kept := viaProxy(oldPort, "", true)
	require.True(t, get(kept, origin.URL+"/kept/1", ""), "the job's port serves")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	load := exec.CommandContext(ctx, warcbench, "run", "--json", "--duration", "4s", "--concurrency", "4", "--mode", "new-conn",
		"--proxy", fmt.Sprintf("http://jobA:pw@127.0.0.1:%d", mainPort), origin.URL+"/load")
	var loadOut strings.Builder
	load.Stdout, load.Stderr = &loadOut, &loadOut
	require.NoError(t, load.Start())
	time.Sleep(1500 * time.Millisecond)

	writeJobs(fmt.Sprintf("jobs:\n  - name: jobA\n    password: pw\n    warcprox-meta: {warc-prefix: after}\n"+
		"  - name: ported\n    port: %d\n    warcprox-meta: {warc-prefix: ported-new}\n  - name: jobB\n    warcprox-meta: {warc-prefix: jobB}\n", newPort))
	mark := len(p.stderr.String())
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	waitLog(t, p, mark, "jobs reloaded")
	require.True(t, get(viaProxy(newPort, "", false), origin.URL+"/moved", ""), "the moved port serves")
	require.True(t, get(viaProxy(mainPort, "jobB", false), origin.URL+"/added", ""), "the added job is known")
	_, err = viaProxy(oldPort, "", false).Get(origin.URL + "/gone")
	require.Error(t, err, "the old port no longer takes connections")
	require.True(t, get(kept, origin.URL+"/kept/2", ""), "a connection from before keeps its job")

	writeJobs("jobs: [{name: broken, pasword: x}]\n")
	mark = len(p.stderr.String())
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	waitLog(t, p, mark, "reloading --jobs failed")
	taken, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	writeJobs(fmt.Sprintf("jobs:\n  - name: elsewhere\n    port: %d\n", taken.Addr().(*net.TCPAddr).Port))
	mark = len(p.stderr.String())
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	waitLog(t, p, mark, "address already in use")
	require.True(t, get(viaProxy(mainPort, "jobB", false), origin.URL+"/still", ""), "the table in force is still the second")

	require.NoError(t, load.Wait(), loadOut.String())
	var sum struct {
		Requests, Successes, Errors int64
	}
	require.NoError(t, json.Unmarshal([]byte(loadOut.String()), &sum), loadOut.String())
	require.Positive(t, sum.Requests)
	require.Zero(t, sum.Errors, "requests failed across the reload: %s", loadOut.String())

	metrics := fetchText(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", mainPort))
	require.Contains(t, metrics, "warcproxy_jobs_reloads_total 1\n")
	require.Contains(t, metrics, "warcproxy_jobs_reload_errors_total 2\n")
	require.Contains(t, metrics, `warcproxy_job_requests_total{crawl_job="jobB"} 2`)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, 30*time.Second), p.stderr.String())

	// Where each capture went: the load's, by the table its connection
	// started with, before and after the reload.
	prefixOf := map[string]map[string]int{}
	for _, r := range warccheck.Dir(t, filepath.Join(p.cmd.Dir, "warcs")) {
		if r.Type != "response" && r.Type != "revisit" { // the same "ok" each time
			continue
		}
		path := strings.TrimPrefix(r.TargetURI, origin.URL)
		prefix, _, _ := strings.Cut(r.File, "-20")
		if prefixOf[path] == nil {
			prefixOf[path] = map[string]int{}
		}
		prefixOf[path][prefix]++
	}
	require.Equal(t, map[string]int{"ported-old": 1}, prefixOf["/kept/1"])
	require.Equal(t, map[string]int{"ported-old": 1}, prefixOf["/kept/2"])
	require.Equal(t, map[string]int{"ported-new": 1}, prefixOf["/moved"])
	require.Equal(t, map[string]int{"jobB": 1}, prefixOf["/added"])
	require.Positive(t, prefixOf["/load"]["before"], "load before the reload")
	require.Positive(t, prefixOf["/load"]["after"], "load after the reload")
	require.Equal(t, sum.Successes, int64(prefixOf["/load"]["before"]+prefixOf["/load"]["after"]), "every load request recorded once")
}

func fetchText(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}
