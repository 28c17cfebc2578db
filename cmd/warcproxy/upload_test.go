package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/s3test"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
	"github.com/warcproxy/warcproxy/upload"
)

// hook is an HTTP receiver of completion events.
type hook struct {
	mu     sync.Mutex
	events []upload.Event
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var e upload.Event
	if err := json.NewDecoder(r.Body).Decode(&e); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
}

func (h *hook) byKey() map[string]upload.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := map[string]upload.Event{}
	for _, e := range h.events {
		m[e.Key] = e // repeats are allowed: at least once
	}
	return m
}

// localFiles lists what is left under dir, hidden folders (the upload
// states, the spool) aside.
func localFiles(t *testing.T, dir string) []string {
	t.Helper()
	var left []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if err == nil && !d.IsDir() {
			left = append(left, path)
		}
		return nil
	})
	return left
}

// The whole path, through the binary: WARCs, their CDXJ and the crawl log
// go to the bucket, through a store outage (SIGSTOP while the proxy
// records, then SIGCONT); nothing closed is left on disk, the bucket's
// WARCs hold every capture once and pass the independent readers, and
// each object's completion event came.
func TestUploadThroughAStoreOutage(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	bucket := srv.Bucket(t, "archive")
	h := &hook{}
	receiver := httptest.NewServer(h)
	defer receiver.Close()
	origin := bigBodyOrigin(t, 60<<10)
	p := startMain(t, "--port", "0", "--dir", "warcs", "--cdxj", "--crawl-log-dir", "logs", "--rollover-size", "300KB",
		"--dedup-db", "none", "--stats-db", "none", "--upload-to", "s3://"+bucket+"/crawl1",
		"--upload-endpoint", srv.Endpoint, "--upload-webhook", receiver.URL+"/events")
	client := proxyClient(p.port)
	const n = 30
	for i := range n {
		if i == 10 {
			require.NoError(t, srv.Freeze())
		}
		require.True(t, get(client, fmt.Sprintf("%s/page/%d", origin.URL, i), ""), "capture %d", i)
	}
	time.Sleep(2 * time.Second) // the proxy records and closes files while the store is stopped
	require.NoError(t, srv.Thaw())
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, 90*time.Second), p.stderr.String())

	dir := p.cmd.Dir
	require.Empty(t, localFiles(t, filepath.Join(dir, "warcs")), "every closed file shipped and removed")
	require.Empty(t, localFiles(t, filepath.Join(dir, "logs")))

	got := srv.Download(t, bucket, "crawl1")
	warcs, _ := filepath.Glob(filepath.Join(got, "*.warc.gz"))
	require.Greater(t, len(warcs), 2, "rolled over at 300KB")
	seen := map[string]int{}
	for _, r := range warccheck.Files(t, warcs...) {
		if r.Type == "response" {
			seen[r.TargetURI]++
		}
	}
	require.Len(t, seen, n)
	for u, c := range seen {
		require.Equal(t, 1, c, "%s recorded once", u)
	}
	for _, w := range warcs {
		idx, err := os.ReadFile(strings.TrimSuffix(w, ".warc.gz") + ".cdxj")
		require.NoError(t, err, "the index of %s", filepath.Base(w))
		for _, r := range warccheck.Files(t, w) {
			if r.Type == "response" {
				require.Contains(t, string(idx), `"url":"`+r.TargetURI+`"`, "%s indexed in %s", r.TargetURI, filepath.Base(w))
			}
		}
	}
	logs, _ := filepath.Glob(filepath.Join(got, "crawl-logs", "*.log"))
	require.Len(t, logs, 1)
	require.Equal(t, n, countLines(t, logs[0]))

	events := h.byKey()
	objects := srv.List(t, bucket, "crawl1")
	require.Len(t, events, len(objects), "an event per object")
	for _, o := range objects {
		e, ok := events["crawl1/"+o.Path]
		require.True(t, ok, "no event for %s", o.Path)
		require.Equal(t, o.Size, e.Size)
		require.True(t, e.Completed)
		if e.Kind == upload.KindWARC {
			require.Equal(t, "WARCPROX", e.WARCPrefix)
			require.Positive(t, e.Records)
		}
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		n++
	}
	return n
}

// With --upload-keep-local the local files stay, and each object in the
// bucket is the local file byte for byte.
func TestUploadKeepLocalByteIdentical(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	bucket := srv.Bucket(t, "archive")
	origin := bigBodyOrigin(t, 20<<10)
	p := startMain(t, "--port", "0", "--dir", "warcs", "--subdir-prefix", "--cdxj", "--rollover-size", "100KB",
		"--upload-to", "s3://"+bucket+"/k", "--upload-endpoint", srv.Endpoint, "--upload-keep-local")
	client := proxyClient(p.port)
	for i := range 12 {
		require.True(t, get(client, fmt.Sprintf("%s/%d", origin.URL, i), `{"warc-prefix":"jobA"}`))
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, 60*time.Second), p.stderr.String())
	local := localFiles(t, filepath.Join(p.cmd.Dir, "warcs"))
	require.NotEmpty(t, local)
	got := srv.Download(t, bucket, "k")
	for _, path := range local {
		rel, _ := filepath.Rel(filepath.Join(p.cmd.Dir, "warcs"), path)
		require.True(t, strings.HasPrefix(rel, "jobA/"), "--subdir-prefix's layout is the key's: %s", rel)
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		have, err := os.ReadFile(filepath.Join(got, rel))
		require.NoError(t, err, "%s not shipped", rel)
		require.True(t, bytes.Equal(want, have), "%s differs in the bucket", rel)
	}
}

// kill -9 in the middle of a multipart upload leaves an upload in the
// bucket and the WARC on disk; the next start aborts that upload and
// ships the file whole.
func TestUploadKill9MidMultipart(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	bucket := srv.Bucket(t, "archive")
	// A front that holds every part after the first, until released.
	var parts atomic.Int32
	release := make(chan struct{})
	held := make(chan struct{}, 16)
	target, _ := url.Parse(srv.Endpoint)
	rp := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Query().Has("partNumber") && parts.Add(1) > 1 {
			held <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	defer front.Close()
	defer close(release)

	origin := bigBodyOrigin(t, 1<<20)
	args := []string{"--port", "0", "--dir", "warcs", "--writer-workers", "1", "--rollover-size", "12MB", "--dedup-db", "none", "--stats-db", "none",
		"--upload-to", "s3://" + bucket + "/mp", "--upload-endpoint", front.URL, "--upload-part-size", "5MiB"}
	p := startMain(t, args...)
	client := proxyClient(p.port)
	for i := range 14 { // 14 MB: one WARC of 12 MB closes
		require.True(t, get(client, fmt.Sprintf("%s/%d", origin.URL, i), ""))
	}
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatalf("no second part was sent:\n%s", p.stderr.String())
	}
	require.NoError(t, p.cmd.Process.Kill())
	p.wait(t, 10*time.Second)
	require.NotEmpty(t, srv.Multipart(t, bucket), "the killed upload is left in the bucket")
	closed, _ := filepath.Glob(filepath.Join(p.cmd.Dir, "warcs", "*.warc.gz"))
	require.Len(t, closed, 1)
	want, err := os.ReadFile(closed[0])
	require.NoError(t, err)

	// The next start, on the same folder, straight to the store.
	args[len(args)-3] = srv.Endpoint
	out := rerunUntil(t, p.cmd.Dir, args, func(out string) bool { return strings.Contains(out, "msg=shipped") })
	require.Contains(t, out, "aborted a multipart upload left by an earlier run")
	require.Empty(t, srv.Multipart(t, bucket), "nothing accumulates in the bucket")
	got := srv.Download(t, bucket, "mp")
	have, err := os.ReadFile(filepath.Join(got, filepath.Base(closed[0])))
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, have), "the object is the whole file")
	_, err = os.Stat(closed[0])
	require.ErrorIs(t, err, os.ErrNotExist)
}

// A store that refuses the credentials or has no such bucket is a
// configuration error, found before anything is created; so are flags
// that cannot work together.
func TestUploadConfigErrorsExit2(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.Bucket(t, "archive")
	t.Run("a store that refuses the credentials", func(t *testing.T) {
		t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
		exit2Case{args: []string{"--upload-to", "s3://archive/x", "--upload-endpoint", srv.Endpoint},
			want: []string{"--upload-to s3://archive/x/: refused by the store", "SignatureDoesNotMatch"}, notWant: []string{"not-the-secret"}}.run(t)
	})
	for _, tc := range []exit2Case{
		{"no such bucket", nil, []string{"--upload-to", "s3://nobucket/x", "--upload-endpoint", srv.Endpoint},
			[]string{"--upload-to s3://nobucket/x/: refused by the store", "NoSuchBucket"}, nil},
		{"a file name two pods could share", nil, []string{"--upload-to", "s3://archive/x", "--upload-endpoint", srv.Endpoint,
			"--warc-filename", "{prefix}-{timestamp17}-{serialno}"}, []string{"--warc-filename", "no {randomtoken}"}, nil},
		{"not an s3 URL", nil, []string{"--upload-to", "https://archive/x"}, []string{"--upload-to", "want s3://BUCKET/PREFIX"}, nil},
		{"an endpoint without --upload-to", nil, []string{"--upload-endpoint", srv.Endpoint}, []string{"--upload-endpoint: needs --upload-to"}, nil},
		{"a webhook that is not one", nil, []string{"--upload-to", "s3://archive/x", "--upload-endpoint", srv.Endpoint,
			"--upload-webhook", "redis://127.0.0.1:6379/0"}, []string{"--upload-webhook", "redis://host:port/DB/KEY"}, nil},
		{"a CA file that is not one", map[string]string{"ca.txt": "hello"}, []string{"--upload-to", "s3://archive/x",
			"--upload-endpoint", srv.Endpoint, "--upload-ca-file", "ca.txt"}, []string{"--upload-ca-file: ca.txt holds no PEM certificate"}, nil},
	} {
		t.Run(tc.name, tc.run)
	}
}

// A store that is down at start does not stop the proxy: it records, and
// ships once the store is there.
func TestUploadStoreDownAtStart(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	bucket := srv.Bucket(t, "archive")
	srv.Kill()
	origin := bigBodyOrigin(t, 1000)
	p := startMain(t, "--port", "0", "--dir", "warcs", "--upload-to", "s3://"+bucket+"/d", "--upload-endpoint", srv.Endpoint,
		"--rollover-idle-time", "1s")
	require.True(t, get(proxyClient(p.port), origin.URL+"/x", ""))
	require.NoError(t, srv.Restart())
	deadline := time.Now().Add(60 * time.Second)
	for len(srv.List(t, bucket, "d")) == 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, 60*time.Second), p.stderr.String())
	require.Len(t, srv.List(t, bucket, "d"), 1, p.stderr.String())
}

// SIGTERM while the store does not answer: the budget ends with files
// unshipped; they stay on disk, the log says how many and how large, the
// exit code is 0 (nothing is lost), and the next start ships them first.
func TestUploadSIGTERMLeavesTheRestForTheNextStart(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	bucket := srv.Bucket(t, "archive")
	origin := bigBodyOrigin(t, 50<<10)
	args := []string{"--port", "0", "--dir", "warcs", "--rollover-size", "100KB", "--shutdown-timeout", "3s",
		"--upload-to", "s3://" + bucket + "/t", "--upload-endpoint", srv.Endpoint}
	p := startMain(t, args...)
	require.NoError(t, srv.Freeze())
	client := proxyClient(p.port)
	for i := range 8 {
		require.True(t, get(client, fmt.Sprintf("%s/%d", origin.URL, i), ""))
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, 30*time.Second), p.stderr.String())
	require.Contains(t, p.stderr.String(), "files left to ship at the next start")
	left := localFiles(t, filepath.Join(p.cmd.Dir, "warcs"))
	require.NotEmpty(t, left)
	require.NoError(t, srv.Thaw())

	out := rerunUntil(t, p.cmd.Dir, args, func(string) bool { return len(localFiles(t, filepath.Join(p.cmd.Dir, "warcs"))) == 0 })
	require.Contains(t, out, "files left by an earlier run go first")
	require.Len(t, srv.List(t, bucket, "t"), len(left), out)
}

// rerunUntil starts the proxy again in dir with args, waits (a minute at
// most) until done says so of its log, stops it with SIGTERM, and returns
// its log; it must exit 0.
func rerunUntil(t *testing.T, dir string, args []string, done func(log string) bool) string {
	t.Helper()
	cmd := selfCommand(t, args...)
	cmd.Dir = dir
	var out lockedBuffer
	cmd.Stderr = &out
	require.NoError(t, cmd.Start())
	for deadline := time.Now().Add(time.Minute); !done(out.String()) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), out.String())
	return out.String()
}
