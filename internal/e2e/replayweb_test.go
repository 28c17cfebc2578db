//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/warcproxy/warcproxy/internal/testutil/gobuild"
)

// replayWebDir holds replay.mjs and its node packages (ReplayWeb.page and
// puppeteer-core), installed by `npm ci --prefix` it.
const replayWebDir = "testdata/replayweb"

// replayWeb runs replay.mjs.
type replayWeb struct {
	node   string
	script string
	pkg    string // node_modules/replaywebpage: ui.js, sw.js
}

// needReplayWeb returns the replay runner, or skips the test (fails it
// under CI=true, where .ci/run installs the packages).
func needReplayWeb(t *testing.T) *replayWeb {
	t.Helper()
	node := needTool(t, "nodejs", "node")
	dir, err := filepath.Abs(replayWebDir)
	if err != nil {
		t.Fatal(err)
	}
	r := &replayWeb{node: node, script: filepath.Join(dir, "replay.mjs"), pkg: filepath.Join(dir, "node_modules", "replaywebpage")}
	for _, f := range []string{
		filepath.Join(r.pkg, "ui.js"),
		filepath.Join(r.pkg, "sw.js"),
		filepath.Join(dir, "node_modules", "puppeteer-core", "package.json"),
	} {
		if _, err := os.Stat(f); err != nil {
			msg := fmt.Sprintf("ReplayWeb.page and puppeteer-core are not installed (%v): run `npm ci --prefix internal/e2e/%s`", err, replayWebDir)
			if inCI() {
				t.Fatalf("%s (.ci/run does)", msg)
			}
			t.Skip(msg)
		}
	}
	return r
}

// replayRun is one replay: archive is loaded into ReplayWeb.page, which is
// asked for url and must end up showing target (url or where it redirects)
// with waitFor in its text.
type replayRun struct {
	archive, url, target, waitFor string
	name                          string // of the screenshot, when one is asked for
	// lookup, when set, is a URL whose captures ReplayWeb.page's index is
	// asked for (replayReport.Lookup).
	lookup string
}

// replayReport mirrors replay.mjs's output.
type replayReport struct {
	Puppeteer     string `json:"puppeteer"`
	ReplayWebPage string `json:"replaywebpage"`
	Chromium      string `json:"chromium"`
	Found         bool   `json:"found"`
	FrameURL      string `json:"frameURL"`
	Frames        []struct {
		URL  string `json:"url"`
		HTML string `json:"html"`
	} `json:"frames"`
	Title     string        `json:"title"`
	Text      string        `json:"text"`
	H1Color   string        `json:"h1Color"`
	Images    []replayImage `json:"images"`
	OffHost   []string      `json:"offHost"`
	Console   []string      `json:"console"`
	ElapsedMs int64         `json:"elapsedMs"`
	// Lookup is what ReplayWeb.page's index holds at replayRun.lookup.
	Lookup *struct {
		URLs []struct {
			URL    string `json:"url"`
			Mime   string `json:"mime"`
			Status int    `json:"status"`
		} `json:"urls"`
		Error string `json:"error"`
	} `json:"lookup"`

	// Served is what the static server answered, in order: "GET /x 200",
	// "GET /y 206 bytes=0-99".
	Served []string `json:"-"`
}

// replayImage is an image of the replayed page, as replay.mjs saw it.
type replayImage struct {
	Src          string `json:"src"`
	Complete     bool   `json:"complete"`
	NaturalWidth int    `json:"naturalWidth"`
}

// screenshotDirEnv names a directory where each replay also leaves a
// screenshot (replay-NAME.png) of ReplayWeb.page showing the replayed page,
// e.g. for docs/replay.png.
const screenshotDirEnv = "WARCPROXY_TEST_REPLAY_SCREENSHOTS"

// replay serves ReplayWeb.page and the archive from a static server on
// loopback (with range requests, which WACZ reading needs), runs
// replay.mjs against it and returns what it saw.
func (r *replayWeb) replay(t *testing.T, chromium string, run replayRun) replayReport {
	t.Helper()
	site, served := r.serve(t, run)
	args := []string{r.script,
		"--chromium", chromium,
		"--embed", site + "/",
		"--target", run.target,
		"--wait-for", run.waitFor,
		"--timeout", "30000",
	}
	if run.lookup != "" {
		args = append(args, "--lookup", run.lookup)
	}
	if dir := os.Getenv(screenshotDirEnv); dir != "" {
		args = append(args, "--screenshot", filepath.Join(dir, "replay-"+run.name+".png"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.node, args...)
	cmd.Dir = filepath.Dir(r.script)
	// The browser's profile goes under the test's own temp directory.
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	// puppeteer's Chromium and its renderers are node's children: on a
	// timeout the whole process group goes, not only node.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("replay.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var rep replayReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("reading replay.mjs output: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	rep.Served = served()
	t.Logf("static server answered: %s", strings.Join(rep.Served, ", "))
	return rep
}

// serve lays out ReplayWeb.page's self-hosted form in a directory (an
// embedding page; the app, ui.js, and its service worker, sw.js, under
// /replay/, where the app's own frame looks for ui.js too; the archive
// under /archive/) and serves it with net/http's file server,
// which answers range requests. It returns the server's URL and what it
// has answered so far (replayReport.Served).
func (r *replayWeb) serve(t *testing.T, run replayRun) (string, func() []string) {
	t.Helper()
	root := t.TempDir()
	archiveName := filepath.Base(run.archive)
	for link, target := range map[string]string{
		"replay/ui.js":                        filepath.Join(r.pkg, "ui.js"),
		"replay/sw.js":                        filepath.Join(r.pkg, "sw.js"),
		filepath.Join("archive", archiveName): run.archive,
	} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	// The embed snippet of docs/replay.md.
	page := fmt.Sprintf(`<!doctype html>
<html><head><meta charset="utf-8"><title>warcproxy: replay</title>
<link rel="icon" href="data:,">
<script src="/replay/ui.js"></script>
<style>html, body { margin: 0; height: 100%%; }</style>
</head><body>
<replay-web-page source="/archive/%s" url="%s" replayBase="/replay/"></replay-web-page>
</body></html>
`, html.EscapeString(archiveName), html.EscapeString(run.url))
	if err := os.WriteFile(filepath.Join(root, "index.html"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var answered []string
	files := http.FileServer(http.Dir(root))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		files.ServeHTTP(sw, req)
		line := fmt.Sprintf("%s %s %d", req.Method, req.URL.Path, sw.status)
		if rg := req.Header.Get("Range"); rg != "" {
			line += " " + rg
		}
		mu.Lock()
		answered = append(answered, line)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), answered...)
	}
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// packWACZ packs warc into a WACZ with the real `warcproxy wacz`, built
// as a user builds it, and returns the WACZ's path. A build without the
// subcommand skips the test.
func packWACZ(t *testing.T, warc string) string {
	t.Helper()
	bin, cleanup, err := gobuild.Binary("github.com/warcproxy/warcproxy/cmd/warcproxy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	if out, err := exec.Command(bin, "wacz", "--help").CombinedOutput(); err != nil &&
		bytes.Contains(out, []byte(`unexpected argument "wacz"`)) {
		t.Skipf("this warcproxy has no wacz subcommand yet (issue 15, item 2): %s", bytes.TrimSpace(out))
	}
	wacz := filepath.Join(t.TempDir(), "replay-check.wacz")
	out, err := exec.Command(bin, "wacz", "--output", wacz, "--title", "warcproxy replay check", warc).CombinedOutput()
	if err != nil {
		t.Fatalf("warcproxy wacz: %v\n%s", err, out)
	}
	return wacz
}
