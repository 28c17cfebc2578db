package main

import (
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
	"github.com/warcproxy/warcproxy/internal/testutil/zstdcli"
)

// bigBodyOrigin serves a different incompressible body of size bytes for
// every path, so that gzip members are long and a kill lands inside one.
func bigBodyOrigin(t *testing.T, size int) *httptest.Server {
	t.Helper()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := fnv.New64a()
		_, _ = io.WriteString(h, r.URL.Path)
		rng := rand.New(rand.NewPCG(h.Sum64(), 7))
		b := make([]byte, size)
		for i := 0; i+8 <= len(b); i += 8 {
			v := rng.Uint64()
			for j := range 8 {
				b[i+j] = byte(v >> (8 * j))
			}
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(b)
	}))
	t.Cleanup(origin.Close)
	return origin
}

func proxyClient(port string) *http.Client {
	proxyURL, _ := url.Parse("http://127.0.0.1:" + port)
	return &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), MaxIdleConnsPerHost: 64},
		Timeout:   20 * time.Second,
	}
}

// get fetches u through client with an optional Warcprox-Meta header and
// reports whether the whole body came back.
func get(client *http.Client, u, meta string) bool {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	if meta != "" {
		req.Header.Set("Warcprox-Meta", meta)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err == nil && resp.StatusCode == http.StatusOK
}

// openFiles lists the WARC files under dir still named .open, with sizes.
func openFiles(t *testing.T, dir string) map[string]int64 {
	return filesNamed(t, dir, func(name string) bool {
		return strings.HasSuffix(name, ".open") && strings.Contains(name, ".warc")
	})
}

// warcFiles lists the WARC files under dir by their final names
// (*.warc.gz, *.warc.zst, *.warc), with sizes.
func warcFiles(t *testing.T, dir string) map[string]int64 {
	return filesNamed(t, dir, func(name string) bool {
		return strings.HasSuffix(name, ".warc.gz") || strings.HasSuffix(name, ".warc.zst") || strings.HasSuffix(name, ".warc")
	})
}

// filesNamed lists the files under dir whose names match, with sizes.
func filesNamed(t *testing.T, dir string, match func(name string) bool) map[string]int64 {
	t.Helper()
	files := map[string]int64{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && match(d.Name()) {
			info, err := d.Info()
			if err != nil {
				return err
			}
			files[path] = info.Size()
		}
		return nil
	})
	require.NoError(t, err)
	return files
}

// waitFor polls cond until it holds; a test that never gets there fails
// on the go test timeout, not on a guess at how long it should take.
func waitFor(cond func() bool) {
	for !cond() {
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKill9Recovery: kill -9 under load leaves .open files, some cut inside
// a record (a gzip member or a zstd frame); a restart on the same --dir
// recovers them before it serves, so that after a clean stop every file is
// closed and every record verifies. It needs writer.Recover to be called
// from internal/app before the writer pool starts.
func TestKill9Recovery(t *testing.T) {
	forCompressions(t, testKill9Recovery)
}

// forCompressions runs test once with gzip and once with zstd, given the
// flags of each. Slow writers (the strongest levels, on incompressible
// bodies) fall behind the clients, so at a kill they are mid-record rather
// than idle with everything flushed. zstd has a dictionary: recovery must
// read it from the start of a file to check the frames after it.
func forCompressions(t *testing.T, test func(t *testing.T, compression []string)) {
	// No "=" in the subtests' names: it would be in their paths, which
	// slog then quotes.
	t.Run("gzip", func(t *testing.T) { test(t, []string{"--gzip-level", "9"}) })
	t.Run("zstd", func(t *testing.T) {
		var samples [][]byte
		for i := range 100 {
			samples = append(samples, fmt.Appendf(nil, "WARC/1.0\r\nWARC-Type: request\r\nWARC-Target-URI: http://127.0.0.1/c%d/%d\r\n\r\nGET /c%d/%d HTTP/1.1\r\n", i%32, i, i%32, i))
		}
		dict := filepath.Join(t.TempDir(), "warc.dict")
		require.NoError(t, os.WriteFile(dict, zstdcli.Train(t, samples, 2048), 0o644))
		test(t, []string{"--compression", "zstd", "--zstd-level", "19", "--zstd-dictionary", dict})
	})
}

func testKill9Recovery(t *testing.T, compression []string) {
	origin := bigBodyOrigin(t, 200<<10)
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	args := append([]string{"--port", "0", "--dir", warcs, "--cacert", filepath.Join(dir, "ca.pem"),
		"--writer-workers", "2", "--subdir-prefix", "--dedup-db", "none", "--stats-db", "none"}, compression...)
	p := startMain(t, args...)
	client := proxyClient(p.port)

	var done atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 32 {
		wg.Go(func() {
			meta := "" // half the clients write into warcs/job-a/, half into warcs/WARCPROX/
			if c%2 == 1 {
				meta = `{"warc-prefix": "job-a"}`
			}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if get(client, fmt.Sprintf("%s/c%d/%d", origin.URL, c, i), meta) {
					done.Add(1)
				}
			}
		})
	}
	// Kill once captures of both prefixes are on disk and, if the writers
	// fall behind here, while captures wait for them.
	waitFor(func() bool {
		bySubdir := map[string]int64{}
		for path, size := range openFiles(t, warcs) {
			bySubdir[filepath.Base(filepath.Dir(path))] += size
		}
		return bySubdir["WARCPROX"] > 1<<20 && bySubdir["job-a"] > 1<<20 && done.Load() >= 50
	})
	for range 200 {
		if queueLength(p.port) >= 8 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t, 30*time.Second)
	close(stop)
	wg.Wait()

	left := openFiles(t, warcs)
	require.NotEmpty(t, left, "kill -9 leaves open files")
	// A torn write for sure: one file loses the end of its last write.
	var torn string
	for path, size := range left {
		if torn == "" || size > left[torn] {
			torn = path
		}
	}
	require.NoError(t, os.Truncate(torn, left[torn]-1000))

	// With --cdxj, the recovered files are indexed like any closed file.
	p2 := startMain(t, append(slices.Clone(args), "--cdxj")...)
	require.Empty(t, openFiles(t, warcs), "files left open after the restart: is writer.Recover called before the pool starts?\n%s", p2.stderr.String())
	require.NoError(t, p2.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p2.wait(t, 30*time.Second), p2.stderr.String())
	logs := p2.stderr.String()
	// Paths are logged unquoted: t.TempDir's hold no space or quote.
	cut := 0
	for path := range left {
		// Each file is logged as recovered or, without a whole record, removed.
		re := regexp.MustCompile(`msg="crash recovery: (recovered warc file|removed warc file without a whole record)" .*file=` +
			regexp.QuoteMeta(path) + ` .*bytes_cut=(\d+)`)
		m := re.FindStringSubmatch(logs)
		require.NotNil(t, m, "%s not logged:\n%s", path, logs)
		if m[2] != "0" {
			cut++
		} else {
			require.NotEqual(t, torn, path, "the torn file is cut back")
		}
	}
	t.Logf("%d of %d files left open were cut back to their last whole record", cut, len(left))

	for path := range left {
		closed := strings.TrimSuffix(path, ".open")
		if _, err := os.Stat(closed); err != nil {
			continue // removed: no whole record, or renamed -recovered-N
		}
		_, err := os.Stat(cdxjOf(closed))
		require.NoError(t, err, "recovered %s has its CDXJ index", closed)
	}

	recs := warccheck.Dir(t, warcs)
	responses := 0
	for _, r := range recs {
		if r.Type == "response" {
			responses++
		}
	}
	require.Positive(t, responses)
}

// cdxjOf is the index written beside the WARC file at path.
func cdxjOf(path string) string {
	return strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(path, ".gz"), ".zst"), ".warc") + ".cdxj"
}

// queueLength reads warcproxy_writer_queue_length from the proxy's
// /metrics (served to origin-form requests); -1 if it cannot.
func queueLength(port string) int {
	resp, err := http.Get("http://127.0.0.1:" + port + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1
	}
	m := regexp.MustCompile(`(?m)^warcproxy_writer_queue_length (\d+)`).FindSubmatch(body)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// TestSecondInstanceLeavesLiveFilesAlone: a second warcproxy started on the
// directory of a live one leaves the live one's open files alone (their
// flock says they are in use); both then stop cleanly and every record of
// the first verifies.
func TestSecondInstanceLeavesLiveFilesAlone(t *testing.T) {
	origin := bigBodyOrigin(t, 10<<10)
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	args := []string{"--port", "0", "--dir", warcs, "--cacert", filepath.Join(dir, "ca.pem"),
		"--dedup-db", "none", "--stats-db", "none"}
	a := startMain(t, args...)
	clientA := proxyClient(a.port)
	for i := range 5 {
		require.True(t, get(clientA, fmt.Sprintf("%s/a/%d", origin.URL, i), ""))
	}
	waitFor(func() bool {
		for _, size := range openFiles(t, warcs) {
			if size > 0 {
				return true
			}
		}
		return false
	})
	live := openFiles(t, warcs)

	b := startMain(t, args...)
	for path := range live {
		require.Regexp(t, `msg="crash recovery: warc file left alone, a live process holds its lock" .*file=`+regexp.QuoteMeta(path), b.stderr.String())
	}
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, b.wait(t, 30*time.Second), b.stderr.String())
	for path := range live {
		require.FileExists(t, path, "the live file keeps its .open name")
	}

	for i := 5; i < 10; i++ {
		require.True(t, get(clientA, fmt.Sprintf("%s/a/%d", origin.URL, i), ""))
	}
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, a.wait(t, 30*time.Second), a.stderr.String())
	archived := map[string]bool{}
	for _, r := range warccheck.Dir(t, warcs) {
		if r.Type == "response" {
			archived[r.TargetURI] = true
		}
	}
	for i := range 10 {
		require.True(t, archived[fmt.Sprintf("%s/a/%d", origin.URL, i)], "capture %d", i)
	}
}

// TestKill9RecoveryNoOpenSuffix: with --no-warc-open-suffix the files are
// under their final names while written; kill -9 under load leaves some
// of them unfinished, and a restart on the same --dir finds those by their
// free locks and unfinished tails and cuts them back, leaving whole files
// alone, so that every file reads cleanly to its end.
func TestKill9RecoveryNoOpenSuffix(t *testing.T) {
	forCompressions(t, testKill9RecoveryNoOpenSuffix)
}

func testKill9RecoveryNoOpenSuffix(t *testing.T, compression []string) {
	origin := bigBodyOrigin(t, 200<<10)
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	args := append([]string{"--port", "0", "--dir", warcs, "--cacert", filepath.Join(dir, "ca.pem"), "--no-warc-open-suffix",
		"--writer-workers", "2", "--rollover-size", "1MB", "--dedup-db", "none", "--stats-db", "none"}, compression...)
	p := startMain(t, args...)
	client := proxyClient(p.port)

	// A few clients, until the kill.
	var done atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if get(client, fmt.Sprintf("%s/c%d/%d", origin.URL, c, i), "") {
					done.Add(1)
				}
			}
		})
	}
	// Kill once a few files have rolled over and more are being written;
	// all the while, every file is under its final name.
	waitFor(func() bool {
		require.Empty(t, openFiles(t, warcs), "no .open names while running")
		var total int64
		for _, size := range warcFiles(t, warcs) {
			total += size
		}
		return total > 3<<20 && done.Load() >= 20
	})
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t, 30*time.Second)
	close(stop)
	wg.Wait()

	left := warcFiles(t, warcs)
	require.NotEmpty(t, left)
	require.Empty(t, openFiles(t, warcs))
	// A torn write for sure: the largest file loses the end of its last
	// write.
	var torn string
	for path, size := range left {
		if torn == "" || size > left[torn] {
			torn = path
		}
	}
	left[torn] -= 1000
	require.NoError(t, os.Truncate(torn, left[torn]))

	p2 := startMain(t, append(slices.Clone(args), "--cdxj")...)
	require.NoError(t, p2.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p2.wait(t, 30*time.Second), p2.stderr.String())
	logs := p2.stderr.String()
	require.Regexp(t, `msg="crash recovery: recovered unfinished warc file" .*file=`+regexp.QuoteMeta(torn)+` .*bytes_cut=[1-9]`, logs)
	_, err := os.Stat(cdxjOf(torn))
	require.NoError(t, err, "the recovered file has its CDXJ index")

	after := warcFiles(t, warcs)
	require.Empty(t, openFiles(t, warcs))
	cut := 0
	for path, size := range left {
		now, kept := after[path]
		re := regexp.MustCompile(`msg="crash recovery: (recovered unfinished warc file|removed warc file without a whole record)" .*file=` +
			regexp.QuoteMeta(path) + ` `)
		switch {
		case !kept:
			require.Regexp(t, re, logs, "%s removed without saying so", path)
		case now < size:
			require.Regexp(t, re, logs, "%s cut without saying so", path)
			cut++
		default:
			require.Equal(t, size, now)
			require.NotRegexp(t, re, logs, "%s was whole", path)
		}
	}
	t.Logf("%d of %d files were cut back to their last whole record", cut, len(left))
	require.Regexp(t, `msg="crash recovery finished" .* whole=[1-9]`, logs, "rolled-over files are whole and left alone")

	// Every file reads cleanly to its end, every digest verified.
	responses := 0
	for _, r := range warccheck.Dir(t, warcs) {
		if r.Type == "response" {
			responses++
		}
	}
	require.Positive(t, responses)
}
