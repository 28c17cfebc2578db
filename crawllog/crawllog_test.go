package crawllog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newLogger(t *testing.T, dir string) (*Logger, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	l, err := New(dir, "myhost.example.org", 8000, nil, reg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l, reg
}

func readLog(t *testing.T, path string) []Line {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	lines, err := ReadLines(f)
	require.NoError(t, err, "crawl log %s", path)
	return lines
}

func urls(lines []Line) []string {
	var u []string
	for _, l := range lines {
		u = append(u, l.URL)
	}
	return u
}

func TestLogOneFilePerPrefix(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "crawl", "logs")
	l, _ := newLogger(t, dir)
	for _, e := range []Entry{
		{URL: "http://example.com/b/aa", Status: 200},
		{URL: "http://example.com/b/bb", Status: 200, Prefix: "test_crawl_log_1"},
		{URL: "http://example.com/b/aa", Status: 200, Prefix: "test_crawl_log_2", Revisit: true},
		{URL: "http://example.com/b/cc", Status: 200},
		{URL: "http://example.com/b/dd", Status: 404, Prefix: "crawl"},
	} {
		require.NoError(t, l.Log(e))
	}
	require.NoError(t, l.Close())

	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{
		"crawl-myhost-8000.log",
		"test_crawl_log_1-myhost-8000.log",
		"test_crawl_log_2-myhost-8000.log",
	}, names)
	require.Equal(t, "crawl-myhost-8000.log", l.FileName(""))

	require.Equal(t, []string{"http://example.com/b/aa", "http://example.com/b/cc", "http://example.com/b/dd"},
		urls(readLog(t, filepath.Join(dir, "crawl-myhost-8000.log"))))
	require.Equal(t, []string{"http://example.com/b/bb"},
		urls(readLog(t, filepath.Join(dir, "test_crawl_log_1-myhost-8000.log"))))
	got := readLog(t, filepath.Join(dir, "test_crawl_log_2-myhost-8000.log"))
	require.Len(t, got, 1)
	require.True(t, got[0].Revisit)
}

func TestLogAppendsToAnExistingFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "crawl-myhost-8000.log")
	old := string(appendLine(nil, &Entry{URL: "http://old/", Status: 200}, logged))
	require.NoError(t, os.WriteFile(path, []byte(old), 0o644))

	l, _ := newLogger(t, dir)
	require.NoError(t, l.Log(Entry{URL: "http://new/", Status: 200}))
	require.NoError(t, l.Close())
	require.Equal(t, []string{"http://old/", "http://new/"}, urls(readLog(t, path)))
}

func TestNewHostname(t *testing.T) {
	dir := t.TempDir()
	l, err := New(dir, "", 3128, nil, nil)
	require.NoError(t, err)
	defer l.Close()
	h, err := os.Hostname()
	require.NoError(t, err)
	short, _, _ := strings.Cut(h, ".")
	require.Equal(t, "warcs-"+short+"-3128.log", l.FileName("warcs"))
}

func TestNewErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	tests := []struct {
		name, dir, host string
		port            int
	}{
		{"dir is a file", file, "h", 80},
		{"dir under a file", filepath.Join(file, "sub"), "h", 80},
		{"empty dir", "", "h", 80},
		{"negative port", t.TempDir(), "h", -1},
		{"port too large", t.TempDir(), "h", 65536},
		{"slash in hostname", t.TempDir(), "a/b", 80},
		{"hostname starts with a dot", t.TempDir(), ".example.org", 80},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := New(tt.dir, tt.host, tt.port, nil, nil)
			require.Error(t, err)
			require.Nil(t, l)
		})
	}

	t.Run("metrics registered twice", func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		l, err := New(t.TempDir(), "h", 80, nil, reg)
		require.NoError(t, err)
		defer l.Close()
		_, err = New(t.TempDir(), "h", 80, nil, reg)
		require.Error(t, err)
	})
}

func TestLogErrors(t *testing.T) {
	dir := t.TempDir()
	l, reg := newLogger(t, dir)

	for _, p := range []string{"a/b", `a\b`, "../x", "a\x00"} {
		require.Error(t, l.Log(Entry{URL: "http://e/", Prefix: p}), "prefix %q", p)
	}
	_, err := os.Stat(filepath.Join(filepath.Dir(dir), "x-myhost-8000.log"))
	require.ErrorIs(t, err, os.ErrNotExist, "../x must not escape the directory")

	l.openFile = func(string) (appendFile, error) { return nil, syscall.EMFILE }
	require.ErrorIs(t, l.Log(Entry{URL: "http://e/"}), syscall.EMFILE)
	l.openFile = openAppend
	require.NoError(t, l.Log(Entry{URL: "http://e/"}))

	require.NoError(t, l.Close())
	require.ErrorIs(t, l.Log(Entry{URL: "http://e/"}), ErrClosed)
	require.NoError(t, l.Close(), "second Close")

	require.Equal(t, 6.0, testutil.ToFloat64(l.errs))
	require.Equal(t, 1.0, testutil.ToFloat64(l.lines))
	require.Equal(t, 0.0, testutil.ToFloat64(l.openFiles))
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)
}

// failingFile fails its first Write after writing part of the line, like a
// disk that fills up mid-line.
type failingFile struct {
	*os.File
	failWrites   int
	failTruncate bool
}

func (f *failingFile) Write(p []byte) (int, error) {
	if f.failWrites > 0 {
		f.failWrites--
		n, _ := f.File.Write(p[:len(p)/2])
		return n, syscall.ENOSPC
	}
	return f.File.Write(p)
}

func (f *failingFile) Truncate(size int64) error {
	if f.failTruncate {
		return syscall.EIO
	}
	return f.File.Truncate(size)
}

func TestLogPartialWrite(t *testing.T) {
	tests := []struct {
		name         string
		failTruncate bool
		wantURLs     []string // of the lines that parse
		wantLines    int      // lines in the file
	}{
		{"fragment removed", false, []string{"http://e/1", "http://e/3"}, 2},
		{"fragment kept on a line of its own", true, []string{"http://e/1", "http://e/3"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := newLogger(t, dir)
			var ff *failingFile
			l.openFile = func(path string) (appendFile, error) {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
				ff = &failingFile{File: f, failTruncate: tt.failTruncate}
				return ff, err
			}
			require.NoError(t, l.Log(Entry{URL: "http://e/1", Status: 200}))
			ff.failWrites = 1
			err := l.Log(Entry{URL: "http://e/2", Status: 200})
			require.ErrorIs(t, err, syscall.ENOSPC)
			require.NoError(t, l.Log(Entry{URL: "http://e/3", Status: 200}))
			require.NoError(t, l.Close())

			data, err := os.ReadFile(filepath.Join(dir, l.FileName("")))
			require.NoError(t, err)
			require.True(t, strings.HasSuffix(string(data), "\n"))
			all := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			require.Len(t, all, tt.wantLines)
			var got []string
			for _, s := range all {
				if l, err := ParseLine(s); err == nil {
					got = append(got, l.URL)
				}
			}
			require.Equal(t, tt.wantURLs, got)
		})
	}
}

// TestLogConcurrent has 50 goroutines log 200 lines each, of lengths from
// 100 bytes to 12 KiB, into three files: every line must come out whole,
// exactly once.
func TestLogConcurrent(t *testing.T) {
	dir := t.TempDir()
	l, _ := newLogger(t, dir)
	const goroutines, perGoroutine = 50, 200
	prefixes := []string{"", "a", "b"}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				pad := strings.Repeat("x", (g*perGoroutine+i)*7%12000)
				err := l.Log(Entry{
					URL:      fmt.Sprintf("http://example.com/%d/%d?%s", g, i, pad),
					Status:   200,
					Metadata: []byte(fmt.Sprintf(`{"seed":"seed %d %d"}`, g, i)),
					Prefix:   prefixes[(g+i)%len(prefixes)],
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, l.Close())

	seen := make(map[string]bool)
	for _, p := range prefixes {
		for _, line := range readLog(t, filepath.Join(dir, l.FileName(p))) {
			var g, i int
			_, err := fmt.Sscanf(line.URL, "http://example.com/%d/%d?", &g, &i)
			require.NoError(t, err)
			require.Equal(t, prefixes[(g+i)%len(prefixes)], p, "line of %d/%d in the wrong file", g, i)
			require.Equal(t, fmt.Sprintf("seed%%20%d%%20%d", g, i), line.Seed)
			require.Len(t, line.URL, len(fmt.Sprintf("http://example.com/%d/%d?", g, i))+(g*perGoroutine+i)*7%12000)
			require.False(t, seen[line.URL], "duplicate line %d/%d", g, i)
			seen[line.URL] = true
		}
	}
	require.Len(t, seen, goroutines*perGoroutine)
	require.Equal(t, float64(goroutines*perGoroutine), testutil.ToFloat64(l.lines))
	require.Equal(t, 0.0, testutil.ToFloat64(l.errs))
}

// openLogFiles counts this process's file descriptors open on files in dir.
func openLogFiles(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && filepath.Dir(target) == dir {
			n++
		}
	}
	return n
}

// TestLogOpenFilesLRU logs to 200 prefixes twice: no more than
// DefaultMaxOpenFiles files are ever open, the most recently used stay
// open, and an evicted file is appended to when it comes back.
func TestLogOpenFilesLRU(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	l, _ := newLogger(t, dir)
	const prefixes = 200
	maxSeen := 0
	for round := range 2 {
		for p := range prefixes {
			require.NoError(t, l.Log(Entry{URL: fmt.Sprintf("http://e/%d/%d", p, round), Prefix: fmt.Sprintf("p%03d", p)}))
			maxSeen = max(maxSeen, openLogFiles(t, dir))
		}
	}
	require.Equal(t, DefaultMaxOpenFiles, maxSeen)
	require.Equal(t, float64(DefaultMaxOpenFiles), testutil.ToFloat64(l.openFiles))

	// The last 64 prefixes are open: logging to them again opens nothing.
	var reopened []string
	l.openFile = func(path string) (appendFile, error) {
		reopened = append(reopened, filepath.Base(path))
		return openAppend(path)
	}
	for p := prefixes - DefaultMaxOpenFiles; p < prefixes; p++ {
		require.NoError(t, l.Log(Entry{URL: fmt.Sprintf("http://e/%d/2", p), Prefix: fmt.Sprintf("p%03d", p)}))
	}
	require.Empty(t, reopened)
	require.NoError(t, l.Log(Entry{URL: "http://e/0/2", Prefix: "p000"}))
	require.Equal(t, []string{"p000-myhost-8000.log"}, reopened)

	require.NoError(t, l.Close())
	require.Equal(t, 0, openLogFiles(t, dir))
	require.Equal(t, 0.0, testutil.ToFloat64(l.openFiles))
	for p := range prefixes {
		want := []string{fmt.Sprintf("http://e/%d/0", p), fmt.Sprintf("http://e/%d/1", p)}
		if p == 0 || p >= prefixes-DefaultMaxOpenFiles {
			want = append(want, fmt.Sprintf("http://e/%d/2", p))
		}
		require.Equal(t, want, urls(readLog(t, filepath.Join(dir, fmt.Sprintf("p%03d-myhost-8000.log", p)))))
	}
}

// TestLogOpenFilesLRUConcurrent has goroutines log to many prefixes at
// once: lines stay whole and the open files settle back to the limit.
func TestLogOpenFilesLRUConcurrent(t *testing.T) {
	dir := t.TempDir()
	l, _ := newLogger(t, dir)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 200 {
				_ = l.Log(Entry{URL: fmt.Sprintf("http://e/%d/%d", g, i), Prefix: fmt.Sprintf("p%d", (g*7+i)%150)})
			}
		})
	}
	wg.Wait()
	require.Equal(t, float64(DefaultMaxOpenFiles), testutil.ToFloat64(l.openFiles))
	require.Equal(t, 16*200.0, testutil.ToFloat64(l.lines))
	require.NoError(t, l.Close())
	n := 0
	for p := range 150 {
		n += len(readLog(t, filepath.Join(dir, l.FileName(fmt.Sprintf("p%d", p)))))
	}
	require.Equal(t, 16*200, n)
}

func TestMetrics(t *testing.T) {
	l, reg := newLogger(t, t.TempDir())
	require.NoError(t, l.Log(Entry{URL: "http://e/", Status: 200}))
	require.NoError(t, l.Log(Entry{URL: "http://e/", Status: 200, Prefix: "x"}))
	require.Error(t, l.Log(Entry{URL: "http://e/", Prefix: "a/b"}))

	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)
	err = testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP warcproxy_crawllog_errors_total Crawl log lines not written, and crawl log files that failed to close.
# TYPE warcproxy_crawllog_errors_total counter
warcproxy_crawllog_errors_total 1
# HELP warcproxy_crawllog_lines_total Crawl log lines written.
# TYPE warcproxy_crawllog_lines_total counter
warcproxy_crawllog_lines_total 2
# HELP warcproxy_crawllog_open_files Crawl log files open.
# TYPE warcproxy_crawllog_open_files gauge
warcproxy_crawllog_open_files 2
`), "warcproxy_crawllog_errors_total", "warcproxy_crawllog_lines_total", "warcproxy_crawllog_open_files")
	require.NoError(t, err)

	mfs, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	require.True(t, slices.Contains(names, "warcproxy_crawllog_written_bytes_total"), "%v", names)
	require.Positive(t, testutil.ToFloat64(l.bytes))
}

// TestCloseWaitsForWriters closes the logger while goroutines log: every
// Log that returned nil has its line in a file.
func TestCloseWaitsForWriters(t *testing.T) {
	dir := t.TempDir()
	l, _ := newLogger(t, dir)
	var started, done sync.WaitGroup
	var mu sync.Mutex
	var written []string
	for g := range 8 {
		started.Add(1)
		done.Go(func() {
			for i := 0; ; i++ {
				if i == 20 {
					started.Done()
				}
				u := fmt.Sprintf("http://e/%d/%d", g, i)
				err := l.Log(Entry{URL: u, Prefix: fmt.Sprintf("p%d", g%3)})
				if errors.Is(err, ErrClosed) {
					if i < 20 {
						started.Done()
					}
					return
				}
				if err == nil {
					mu.Lock()
					written = append(written, u)
					mu.Unlock()
				}
			}
		})
	}
	started.Wait()
	require.NoError(t, l.Close())
	done.Wait()
	got := make(map[string]bool)
	for p := range 3 {
		for _, line := range readLog(t, filepath.Join(dir, l.FileName(fmt.Sprintf("p%d", p)))) {
			got[line.URL] = true
		}
	}
	require.GreaterOrEqual(t, len(written), 8*20)
	require.Len(t, got, len(written))
	for _, u := range written {
		require.True(t, got[u], "Log returned nil for %s but it is not in the file", u)
	}
}
