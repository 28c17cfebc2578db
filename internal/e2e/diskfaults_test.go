package e2e

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/app"
	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/faultfs"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
	"github.com/warcproxy/warcproxy/writer"
)

// Issue 5: writers never drop records. When the disk fails (ENOSPC, EIO)
// the writer cuts the partial record back, keeps the capture and retries
// with back-off; the queue fills, back-pressure reaches clients (blocked
// connections, then 503 past --queue-full-timeout), /status and /metrics
// show the errors, and once writes succeed again everything queued is
// written, once.

// diskWait bounds every wait in these tests; they poll, never sleep a fixed
// time.
const diskWait = 20 * time.Second

// diskBody is the body the origin serves for path: size bytes that do not
// compress (a SHA-256 chain), different for every path, so that no capture
// is deduplicated and a full disk cannot be beaten by gzip.
func diskBody(path string, size int) []byte {
	b := make([]byte, 0, size+sha256.Size)
	sum := sha256.Sum256([]byte(path))
	for len(b) < size {
		b = append(b, sum[:]...)
		sum = sha256.Sum256(sum[:])
	}
	return b[:size]
}

// diskOrigin serves diskBody(path, size) with a Content-Length and counts
// the requests per path.
type diskOrigin struct {
	*httptest.Server
	size int
	mu   sync.Mutex
	hits map[string]int
}

func newDiskOrigin(t *testing.T, size int) *diskOrigin {
	o := &diskOrigin{size: size, hits: make(map[string]int)}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.hits[r.URL.Path]++
		o.mu.Unlock()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(size))
		_, _ = w.Write(diskBody(r.URL.Path, size))
	}))
	t.Cleanup(o.Close)
	return o
}

// fetched lists the URLs whose path the origin has been asked for.
func (o *diskOrigin) fetched() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var urls []string
	for path := range o.hits {
		urls = append(urls, o.URL+path)
	}
	slices.Sort(urls)
	return urls
}

// diskOutcome is what a client got: the body read completely and as served
// (ok), a 503 with its text body (refused), or a failure.
type diskOutcome struct {
	ok      bool
	refused string
	err     error
}

// get fetches the origin's path through c and returns the URL and what
// came of it.
func (o *diskOrigin) get(c *http.Client, path string) (string, diskOutcome) {
	url := o.URL + path
	resp, err := c.Get(url)
	if err != nil {
		return url, diskOutcome{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return url, diskOutcome{err: fmt.Errorf("GET %s: reading the body: %w", url, err)}
	case resp.StatusCode == http.StatusServiceUnavailable:
		return url, diskOutcome{refused: string(body)}
	case resp.StatusCode != http.StatusOK:
		return url, diskOutcome{err: fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)}
	case !bytes.Equal(body, diskBody(path, o.size)):
		return url, diskOutcome{err: fmt.Errorf("GET %s: body of %d bytes is not what the origin sent", url, len(body))}
	}
	return url, diskOutcome{ok: true}
}

// diskLedger collects what the clients got.
type diskLedger struct {
	mu      sync.Mutex
	ok      []string // URLs whose 200 response was read completely
	refused []string // bodies of 503 answers
	errs    []error
}

func (l *diskLedger) add(url string, o diskOutcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case o.ok:
		l.ok = append(l.ok, url)
	case o.err != nil:
		l.errs = append(l.errs, o.err)
	default:
		l.refused = append(l.refused, o.refused)
	}
}

func (l *diskLedger) counts() (ok, refused int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ok), len(l.refused)
}

// oneMetric reads one unlabelled counter or gauge from /metrics.
func oneMetric(t *testing.T, p *proxytest.Proxy, name string) float64 {
	t.Helper()
	for _, mf := range p.Metrics(t) {
		if mf.GetName() != name {
			continue
		}
		require.Len(t, mf.GetMetric(), 1, name)
		if c := mf.GetMetric()[0].GetCounter(); c != nil {
			return c.GetValue()
		}
		return mf.GetMetric()[0].GetGauge().GetValue()
	}
	t.Fatalf("metric %s not in /metrics", name)
	return 0
}

// requireFailingStatus checks what /status and /metrics say while writes
// fail with errText.
func requireFailingStatus(t *testing.T, p *proxytest.Proxy, errText string) {
	t.Helper()
	// Since when, and why: the keys internal/app's status adds from
	// writer.Stats' FailingSince, FailingError and LastWriteError(At).
	require.Eventually(t, func() bool { return p.Status(t)["writer_failing"] == true }, diskWait, 5*time.Millisecond,
		"/status writer_failing stays false while writes fail")
	st := p.Status(t)
	require.Contains(t, fmt.Sprint(st["writer_failing_error"]), errText, "/status writer_failing_error")
	require.Contains(t, fmt.Sprint(st["writer_last_error"]), errText, "/status writer_last_error")
	require.Positive(t, st["writer_errors"], "writer_errors in /status")
	assert.Equal(t, true, st["writer_failing"], "/status writer_failing")
	if since, ok := st["writer_failing_since"].(string); assert.True(t, ok, "/status writer_failing_since: %v", st["writer_failing_since"]) {
		_, err := time.Parse(time.RFC3339Nano, since)
		assert.NoError(t, err, "/status writer_failing_since")
	}
	if at, ok := st["writer_last_error_time"].(string); assert.True(t, ok, "/status writer_last_error_time: %v", st["writer_last_error_time"]) {
		_, err := time.Parse(time.RFC3339Nano, at)
		assert.NoError(t, err, "/status writer_last_error_time")
	}

	require.Positive(t, oneMetric(t, p, "warcproxy_writer_write_errors_total"))
}

// requireRecoveredStatus checks that /status says the writer is no longer
// failing, while the last error stays on record.
func requireRecoveredStatus(t *testing.T, p *proxytest.Proxy, errText string) {
	t.Helper()
	st := p.Status(t)
	require.Equal(t, false, st["writer_failing"], "/status writer_failing after recovery")
	require.Nil(t, st["writer_failing_error"], "/status writer_failing_error after recovery")
	require.Contains(t, fmt.Sprint(st["writer_last_error"]), errText, "/status writer_last_error after recovery")
	require.Positive(t, st["writer_errors"])
	require.Zero(t, st["queued_urls"])
	assert.Nil(t, st["writer_failing_since"], "/status writer_failing_since after recovery")
}

// requireAllWritten stops the proxy and checks its WARCs: no file left
// ".open", every record valid in both readers, and exactly one response
// and one request record for each URL in ok, nothing else.
func requireAllWritten(t *testing.T, p *proxytest.Proxy, ok []string) {
	t.Helper()
	p.Stop()
	require.NoError(t, filepath.WalkDir(p.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".open") {
			t.Errorf("%s left open-named after a clean stop", path)
		}
		return nil
	}))
	recs := warccheck.Dir(t, p.Dir)
	var responses, requests []string
	for _, r := range recs {
		switch r.Type {
		case "response":
			responses = append(responses, r.TargetURI)
		case "request":
			requests = append(requests, r.TargetURI)
		case "warcinfo":
		default:
			t.Errorf("unexpected %s record for %s", r.Type, r.TargetURI)
		}
	}
	require.ElementsMatch(t, ok, responses, "one response record per successful fetch, no duplicates")
	require.ElementsMatch(t, ok, requests, "one request record per successful fetch, no duplicates")
}

// TestDiskFaultsBackPressure: with the disk failing, the first captures
// wait in the queue while their clients got their responses, then clients
// block, then new requests get 503 naming the queue before anything is
// fetched; after the disk heals, every capture whose response a client
// received is written once.
func TestDiskFaultsBackPressure(t *testing.T) {
	tests := []struct {
		name    string
		errText string
		fail    func(*faultfs.FS)
	}{
		{"ENOSPC", "no space left on device", func(f *faultfs.FS) {
			// A disk filling up: the first failing write gets part of its
			// bytes out without saying so (as os.File.WriteAt does),
			// creating files fails after the next one.
			f.Set(faultfs.Write, faultfs.Fault{Err: syscall.ENOSPC, Partial: true, Unreported: true})
			f.Set(faultfs.Open, faultfs.Fault{Err: syscall.ENOSPC, Skip: 1})
		}},
		{"EIO", "input/output error", func(f *faultfs.FS) {
			// A failing device: writes, syncs and renames fail (the file
			// closed after the first failure keeps its ".open" name until
			// a rename works again).
			f.Fail(syscall.EIO, faultfs.Write, faultfs.Sync, faultfs.Rename)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const (
				queueSize = 8
				clients   = 16
				bodySize  = 8 << 10
			)
			origin := newDiskOrigin(t, bodySize)
			fsys := faultfs.New()
			p := proxytest.Start(t, func(c *config.Config) {
				c.QueueSize = queueSize
				c.QueueFullTimeout = 300 * time.Millisecond
				c.WriterWorkers = 1
			}, app.WithWriterFS(fsys))
			var ledger diskLedger

			// Writes go through at first: the worker has a file open with
			// captures in it when the disk fails.
			warm := p.Client()
			for i := range 3 {
				ledger.add(origin.get(warm, fmt.Sprintf("/warm/%d", i)))
			}
			require.Eventually(t, func() bool { return p.Status(t)["captures_written"] == float64(3) }, diskWait, 5*time.Millisecond)
			require.Equal(t, false, p.Status(t)["writer_failing"])

			tt.fail(fsys)
			// One capture for the worker to retry while the clients come.
			ledger.add(origin.get(warm, "/first"))
			require.Eventually(t, func() bool { return fsys.Failures(faultfs.Write) > 0 }, diskWait, 5*time.Millisecond)
			warm.CloseIdleConnections()
			warmed, _ := ledger.counts()

			// Clients with a connection each fetch one URL after the
			// other until told to stop or refused.
			stop := make(chan struct{})
			var running, inflight atomic.Int64
			var wg sync.WaitGroup
			for c := range clients {
				running.Add(1)
				wg.Go(func() {
					defer running.Add(-1)
					client := p.Client()
					defer client.CloseIdleConnections()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						inflight.Add(1)
						url, o := origin.get(client, fmt.Sprintf("/c%d/r%d", c, i))
						inflight.Add(-1)
						ledger.add(url, o)
						if !o.ok {
							return
						}
					}
				})
			}
			// The first requests complete for their clients: their
			// captures wait in the queue (or in the worker's retries).
			// Then every client that was not refused is blocked: its
			// handler waits for room in the queue, so its next request
			// is not even read.
			require.Eventually(t, func() bool {
				ok, _ := ledger.counts()
				r := running.Load()
				return ok > warmed+queueSize && r > 0 && inflight.Load() == r
			}, diskWait, 5*time.Millisecond, "clients do not block on the full queue")
			require.Eventually(t, func() bool { return p.Status(t)["queued_urls"] == float64(queueSize) }, diskWait, 5*time.Millisecond, "queue full")
			require.Positive(t, fsys.Failures(faultfs.Write))

			// Once the queue has been full past --queue-full-timeout, new
			// requests are refused before anything is fetched.
			require.Eventually(t, func() bool {
				return p.Status(t)["queue_full_for_seconds"].(float64) > 0.3
			}, diskWait, 10*time.Millisecond)
			require.Greater(t, oneMetric(t, p, "warcproxy_writer_queue_full_seconds"), 0.3)
			fetchedBefore := origin.fetched()
			late := p.Client()
			for i := range 3 {
				url, o := origin.get(late, fmt.Sprintf("/late/%d", i))
				require.NoError(t, o.err)
				require.False(t, o.ok, "GET %s answered while the queue is full", url)
				require.Contains(t, o.refused, "WARC writer queue has been full")
				require.Contains(t, o.refused, "--queue-full-timeout")
				ledger.add(url, o)
			}
			late.CloseIdleConnections()
			require.Equal(t, fetchedBefore, origin.fetched(), "refused requests reach the origin")

			requireFailingStatus(t, p, tt.errText)

			// The queue bounds what is taken in while the disk fails:
			// past the one the worker retries, every capture a client got
			// a response for is in the queue or held by a handler blocked
			// on the full queue (one per client, whose next request is
			// then not read).
			taken, _ := ledger.counts()
			assert.LessOrEqual(t, taken-warmed, queueSize+clients,
				"captures taken in while the disk failed: the writer must not take captures from the full queue for its retries")

			// The disk heals: the blocked clients get on, and everything
			// queued is written.
			close(stop)
			fsys.Heal()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(diskWait):
				t.Fatalf("%d clients still blocked %s after the disk healed", running.Load(), diskWait)
			}
			p.Settle()
			requireRecoveredStatus(t, p, tt.errText)

			ledger.mu.Lock()
			ok, errs := slices.Clone(ledger.ok), ledger.errs
			ledger.mu.Unlock()
			require.Empty(t, errs)
			// Nothing fetched was lost on the way: every URL the origin
			// served reached its client in full.
			slices.Sort(ok)
			require.Equal(t, ok, origin.fetched())
			t.Logf("%d captures, %d refused, %d write failures, %d create failures",
				len(ok), len(ledger.refused), fsys.Failures(faultfs.Write), fsys.Failures(faultfs.Open))
			requireAllWritten(t, p, ok)
		})
	}
}

// TestDiskFullTmpfs fills a real (tmpfs) disk under the proxy: captures
// wait while writes fail with ENOSPC, and are all written once a filler
// file is deleted. It needs root (to mount the tmpfs) and skips otherwise.
func TestDiskFullTmpfs(t *testing.T) {
	dir := faultfs.Tmpfs(t, 4<<20)
	const bodySize = 16 << 10 // more than the free end of a file's last page
	origin := newDiskOrigin(t, bodySize)
	p := proxytest.Start(t, func(c *config.Config) {
		c.Dir = dir
		c.QueueSize = 8
		c.QueueFullTimeout = 300 * time.Millisecond
		c.WriterWorkers = 1
	})
	client := p.Client()
	defer client.CloseIdleConnections()
	var ok []string
	get := func(path string) {
		t.Helper()
		url, o := origin.get(client, path)
		require.NoError(t, o.err)
		require.True(t, o.ok, "GET %s: %s", url, o.refused)
		ok = append(ok, url)
	}
	for i := range 2 {
		get(fmt.Sprintf("/before/%d", i))
	}
	require.Eventually(t, func() bool { return p.Status(t)["captures_written"] == float64(2) }, diskWait, 5*time.Millisecond)

	filler := faultfs.Fill(t, dir, "filler")
	written := p.Status(t)["captures_written"].(float64)
	const waiting = 5 // fewer than the queue holds: nobody blocks
	for i := range waiting {
		get(fmt.Sprintf("/full/%d", i))
	}
	require.Eventually(t, func() bool { return p.Status(t)["writer_errors"].(float64) >= 2 }, diskWait, 5*time.Millisecond)
	st := p.Status(t)
	require.Contains(t, st["writer_last_error"], syscall.ENOSPC.Error())
	require.Equal(t, written, st["captures_written"], "nothing written to a full disk")
	requireFailingStatus(t, p, "no space left on device")
	st = p.Status(t)
	require.EqualValues(t, waiting, st["captures_pending"], "captures wait")
	require.NotNil(t, st["earliest_still_active_fetch_start"])
	require.Positive(t, st["seconds_behind"])

	require.NoError(t, os.Remove(filler))
	p.Settle()
	require.Equal(t, written+waiting, p.Status(t)["captures_written"])
	requireRecoveredStatus(t, p, "no space left on device")
	requireAllWritten(t, p, ok)
}

// TestSpoolDiskFull: when a response cannot be spooled (--tmp-dir on a
// full disk, bodies over --spool-memory), the client's response is cut,
// so that a crawler sees a failed fetch to try again rather than a whole
// 200 that no WARC holds; the capture is counted as an error. Once there
// is room again, the same URL is fetched and archived whole.
func TestSpoolDiskFull(t *testing.T) {
	s := startFullSpool(t, 1<<20, 64<<10)
	p, client, origin := s.p, s.client, s.origin
	start := time.Now()
	for i := range 3 {
		url, o := origin.get(client, "/page")
		require.False(t, o.ok, "GET %s #%d: a whole 200 while the response could not be spooled", url, i)
		require.Error(t, o.err, "GET %s #%d", url, i)
		t.Logf("the client saw: %v", o.err)
	}
	took := time.Since(start)
	p.Settle()
	require.EqualValues(t, 3, p.Status(t)["capture_errors"])
	if lines := strings.Count(p.Log(), `msg="capture not archived"`); took < time.Second {
		require.Equal(t, 1, lines, "one log line a second, not one per capture")
	} else {
		t.Logf("the fetches took %s: %d log lines", took, lines) // a loaded machine
	}
	require.Contains(t, p.Log(), "no space left on device")
	s.freeAndRefetch(t)
}

// TestSpoolDiskFullBeforeTheHead: when not even the request or the
// response head can be spooled (--spool-memory 0 puts every byte on the
// full disk), the client gets a 503 before anything else, for a HEAD too,
// whose answer has no body to cut.
func TestSpoolDiskFullBeforeTheHead(t *testing.T) {
	s := startFullSpool(t, 1000, 0)
	for _, method := range []string{http.MethodHead, http.MethodGet} {
		req, err := http.NewRequest(method, s.origin.URL+"/page", nil)
		require.NoError(t, err)
		resp, err := s.client.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s: %s", method, body)
	}
	s.p.Settle()
	require.EqualValues(t, 2, s.p.Status(t)["capture_errors"])
	s.freeAndRefetch(t)
}

// fullSpool is a proxy whose --tmp-dir is a full tmpfs, and an origin of
// bodies of one size.
type fullSpool struct {
	p      *proxytest.Proxy
	client *http.Client
	origin *diskOrigin
	filler string
}

// startFullSpool starts a logged proxy with --spool-memory spoolMemory
// and its spool on a tmpfs that it then fills.
func startFullSpool(t *testing.T, bodySize int, spoolMemory int64) *fullSpool {
	spool := faultfs.Tmpfs(t, 4<<20)
	s := &fullSpool{origin: newDiskOrigin(t, bodySize)}
	s.p = proxytest.StartLogged(t, func(c *config.Config) {
		c.TmpDir = spool
		c.SpoolMemory = spoolMemory
	})
	s.client = s.p.Client()
	t.Cleanup(s.client.CloseIdleConnections)
	s.filler = faultfs.Fill(t, spool, "filler")
	return s
}

// freeAndRefetch frees the disk: the same URL is then fetched whole and
// archived.
func (s *fullSpool) freeAndRefetch(t *testing.T) {
	require.NoError(t, os.Remove(s.filler))
	url, o := s.origin.get(s.client, "/page")
	require.NoError(t, o.err)
	require.True(t, o.ok)
	requireAllWritten(t, s.p, []string{url})
}

// TestStuckDiskShutdown: a disk that stops answering (writes that never
// return, not fail) cannot hold a shutdown past --shutdown-timeout: the
// proxy exits, saying the files are left .open, and what it wrote before
// is whole records, readable after the next start's recovery.
func TestStuckDiskShutdown(t *testing.T) {
	fsys := faultfs.New()
	defer fsys.Heal() // let the stuck writer go, so that no goroutine outlives the test
	p := proxytest.Start(t, func(c *config.Config) {
		c.WriterWorkers = 1
		c.ShutdownTimeout = 2 * time.Second
	}, app.WithWriterFS(fsys))
	origin := contentOrigin(t, false)
	client := p.Client()
	for i := range 3 {
		fetch(t, client, fmt.Sprintf("%s/before/%d?body=b%d", origin.URL, i, i), "")
	}
	p.Settle()

	fsys.Stall()
	for i := range 2 {
		start := time.Now()
		resp, _ := fetch(t, client, fmt.Sprintf("%s/stuck/%d?body=s%d", origin.URL, i, i), "")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Less(t, time.Since(start), time.Second, "the client is answered; the capture waits for the disk")
	}
	client.CloseIdleConnections()
	start := time.Now()
	err := p.Shutdown()
	require.Less(t, time.Since(start), 2*time.Second+2*time.Second, "shutdown within --shutdown-timeout")
	require.ErrorContains(t, err, "disk did not answer")

	// What the next start finds: a copy of the directory as the process
	// left it, recovered.
	next := t.TempDir()
	files, _ := filepath.Glob(filepath.Join(p.Dir, "*.warc.gz*"))
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(next, filepath.Base(f)), data, 0o644))
	}
	rep, err := writer.Recover(next, slog.New(slog.DiscardHandler), writer.RecoverOptions{})
	require.NoError(t, err)
	t.Logf("recovered: %+v", rep)
	recs := byURI(principal(warccheck.Dir(t, next)))
	for i := range 3 {
		require.Contains(t, recs, fmt.Sprintf("%s/before/%d?body=b%d", origin.URL, i, i), "written before the disk stalled")
	}

	// The disk answers again: the writer left behind finishes and closes
	// its file, in this process that outlived the shutdown.
	fsys.Heal()
	require.Eventually(t, func() bool {
		open, _ := filepath.Glob(filepath.Join(p.Dir, "*.open"))
		return len(open) == 0
	}, 10*time.Second, 20*time.Millisecond)
}
