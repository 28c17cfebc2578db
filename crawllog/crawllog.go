// Package crawllog writes a Heritrix-format crawl log, one line per capture
// or failed fetch, like warcprox's --crawl-log-dir.
//
// Lines go to one file per WARC prefix, "{prefix}-{shorthostname}-{port}.log"
// in the log directory ("crawl" when the request had no warc-prefix). The
// format of a line is described on [Entry]; [ParseLine] reads one back.
//
// Each line is written with a single write(2) on a file opened with
// O_APPEND, under a per-file mutex, and nothing is buffered in user space: a
// line Log has returned for is in the file, and a process crash or kill can
// at most cut the line being written at that moment, which is then the last
// one. Buffering would save a system call per line but lose every buffered
// line on a crash. A write that fails half-way (a full disk) is rolled back
// with ftruncate so the next line does not land after a fragment.
//
// At most [DefaultMaxOpenFiles] files are kept open, least recently used
// first out (a file in use by a Log call at that moment is closed once the
// call is done), so many prefixes cannot exhaust file descriptors.
package crawllog

import (
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxOpenFiles is how many crawl log files a Logger keeps open.
const DefaultMaxOpenFiles = 64

// DefaultPrefix names the file of lines whose Entry has no Prefix, as
// warcprox does for requests without a warc-prefix.
const DefaultPrefix = "crawl"

// ErrClosed is returned by Log after Close.
var ErrClosed = errors.New("crawl log closed")

// Entry is one crawl log line. The fields are listed in the order of the
// line's columns where they map to one:
//
//	2017-08-03T21:45:24.496Z   200       2189 https://example.com/robots.txt P https://example.com/ text/plain - 20170803214523617+365 sha1:PBS2CEF7B4OSEXZZF3QE2XN2VHYCPNPX https://example.com/ duplicate:digest {"contentSize":2495,"warcFilename":"x.warc.gz","warcFileOffset":942}
//
// that is: log time (UTC, milliseconds), status right-aligned in 5 columns,
// content length right-aligned in 10, URL, hop path, via, MIME type, "-"
// (Heritrix's discovery thread), fetch start with milliseconds "+" fetch
// duration in milliseconds (at least 3 digits), payload digest, seed,
// annotations, and a compact JSON object of extra information with the keys
// contentSize, exception, exceptionMessage, warcFilename, warcFileOffset and
// method, in that order, each only when it applies. Columns are separated by
// single spaces (the padding of status and length aside) and the line ends
// with "\n".
//
// An empty text column is written as "-". Whitespace and control characters
// in a text column (a seed from Warcprox-Meta can hold anything) are written
// as %XX of their UTF-8 bytes, as in a URL, as are invalid UTF-8 bytes; "%"
// itself is not escaped, so a column reads back as written, not unescaped.
// The JSON object escapes every non-ASCII character, control character and
// space as \uXXXX (Python's json.dumps escapes all but the space), so a line
// always splits into exactly 13 fields on whitespace.
type Entry struct {
	// Logged is when the line is written; zero means now.
	Logged time.Time
	// Status is the HTTP status, or a negative Heritrix code for a failed
	// fetch: -2 connection failed or timed out, -6 DNS lookup failed, -8 too
	// many retries, -404 a failure policy treats as not found.
	Status int
	// ContentLength is the payload size in bytes (the response minus its
	// headers); for a WARCPROX_WRITE_RECORD, the record's length.
	ContentLength int64
	URL           string
	// HopPath and Via, when empty, are computed from Metadata and Referer
	// the way warcprox does: hop_path, hop_via_url and the Referer, and a
	// "B" hop (via the brozzled page) for a URL that is not the brozzled_url
	// itself. The hosts of brozzled_url and hop_via_url are IDNA-encoded and
	// their paths percent-encoded before the comparison and in the line.
	HopPath, Via string
	Referer      string
	// MIMEType is the response's Content-Type; parameters after ";" are
	// dropped, and an empty or blank one is written as "unknown".
	MIMEType string
	// FetchStart is when the fetch began; zero writes "-" for the whole
	// fetch-timestamp column.
	FetchStart    time.Time
	FetchDuration time.Duration
	// PayloadDigest is "sha1:..." or empty ("-").
	PayloadDigest string
	// Metadata is the Warcprox-Meta "metadata" object or nil. Its string
	// members seed, hop_path, brozzled_url and hop_via_url are used; a JSON
	// null counts as absent and another non-string value is used as its
	// compact JSON text.
	Metadata json.RawMessage
	// Revisit writes the "duplicate:digest" annotation.
	Revisit bool
	// ContentSize is the whole response's size (extra "contentSize",
	// omitted when <= 0).
	ContentSize int64
	// WARCFilename is the base name of the WARC file the capture went to,
	// "" when nothing was written (then warcFilename and warcFileOffset are
	// omitted).
	WARCFilename string
	WARCOffset   int64
	// Method is the request method; extra "method" when it is not GET. ""
	// means GET.
	Method string
	// Exception and ExceptionMessage describe a failed fetch (extras
	// "exception" and "exceptionMessage", spaces replaced by "_");
	// ExceptionMessage is only written with an Exception.
	Exception, ExceptionMessage string
	// Prefix is the request's warc-prefix; "" means DefaultPrefix.
	Prefix string
}

// appendFile is the part of *os.File the Logger uses; tests swap in one
// that fails.
type appendFile interface {
	Write(p []byte) (int, error)
	Stat() (os.FileInfo, error)
	Truncate(size int64) error
	Close() error
}

func openAppend(path string) (appendFile, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
}

// Logger appends crawl log lines to one file per prefix. It is safe for
// concurrent use.
type Logger struct {
	dir      string
	suffix   string // "-{shorthostname}-{port}.log"
	logger   *slog.Logger
	maxOpen  int
	openFile func(path string) (appendFile, error)

	lines, errs, bytes prometheus.Counter
	openFiles          prometheus.Gauge

	mu     sync.Mutex
	closed bool
	files  map[string]*logFile // by prefix
	lru    list.List           // of *logFile, most recently used first
}

// logFile is one crawl log file. elem and users are guarded by Logger.mu;
// f, gone and needsBreak by mu.
type logFile struct {
	prefix string
	path   string
	elem   *list.Element // nil once out of Logger.files
	users  int           // Log calls holding it; it is not closed while > 0

	mu         sync.Mutex // serializes open, write and close
	f          appendFile
	gone       bool // closed for good
	needsBreak bool // a fragment of a failed write could not be removed
}

// New returns a Logger writing into dir, which it creates (mode 0755) if
// missing. hostname is shortened to its first label, as warcprox does with
// socket.gethostname(); "" means os.Hostname(). port is the proxy's
// listening port. logger is used as given (the caller scopes it with
// "component"); nil discards. Metrics are registered with reg unless it is
// nil.
func New(dir, hostname string, port int, logger *slog.Logger, reg prometheus.Registerer) (*Logger, error) {
	if dir == "" {
		return nil, errors.New("crawl log directory is empty")
	}
	if port < 0 || port > 65535 {
		return nil, fmt.Errorf("crawl log port %d out of range", port)
	}
	if hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("crawl log hostname: %w", err)
		}
		hostname = h
	}
	hostname, _, _ = strings.Cut(hostname, ".")
	if hostname == "" || strings.ContainsAny(hostname, "/\\\x00") {
		return nil, fmt.Errorf("crawl log hostname %q is not usable in a file name", hostname)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating crawl log directory: %w", err)
	}
	l := &Logger{
		dir:      dir,
		suffix:   fmt.Sprintf("-%s-%d.log", hostname, port),
		logger:   logger,
		maxOpen:  DefaultMaxOpenFiles,
		openFile: openAppend,
		files:    make(map[string]*logFile),
		lines: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "warcproxy", Subsystem: "crawllog", Name: "lines_total",
			Help: "Crawl log lines written.",
		}),
		errs: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "warcproxy", Subsystem: "crawllog", Name: "errors_total",
			Help: "Crawl log lines not written, and crawl log files that failed to close.",
		}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "warcproxy", Subsystem: "crawllog", Name: "written_bytes_total",
			Help: "Bytes of crawl log lines written.",
		}),
		openFiles: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "warcproxy", Subsystem: "crawllog", Name: "open_files",
			Help: "Crawl log files open.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{l.lines, l.errs, l.bytes, l.openFiles} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("registering crawl log metrics: %w", err)
			}
		}
	}
	return l, nil
}

// FileName is the name of the file that lines with the given prefix go
// to: "{prefix}-{shorthostname}-{port}.log", prefix "" meaning
// DefaultPrefix.
func (l *Logger) FileName(prefix string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + l.suffix
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Log writes e's line to the file of e.Prefix. It returns ErrClosed after
// Close; any error is also counted in warcproxy_crawllog_errors_total.
func (l *Logger) Log(e Entry) error {
	if strings.ContainsAny(e.Prefix, "/\\\x00") {
		l.errs.Inc()
		return fmt.Errorf("crawl log prefix %q: slash, backslash and NUL are not permitted", e.Prefix)
	}
	prefix := e.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	bp := bufPool.Get().(*[]byte)
	line := appendLine((*bp)[:0], &e, time.Now())
	err := l.write(prefix, line)
	if cap(line) <= 64<<10 {
		*bp = line[:0]
		bufPool.Put(bp)
	}
	if err != nil {
		l.errs.Inc()
		return err
	}
	l.lines.Inc()
	l.bytes.Add(float64(len(line)))
	return nil
}

func (l *Logger) write(prefix string, line []byte) error {
	lf, victims, err := l.acquire(prefix)
	l.closeFiles(victims)
	if err != nil {
		return err
	}
	err = l.writeLine(lf, line)
	l.closeFiles(l.release(lf))
	return err
}

// acquire returns the file of prefix, marked in use, and the files evicted
// to make room for it, for the caller to close outside l.mu.
func (l *Logger) acquire(prefix string) (*logFile, []*logFile, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, nil, ErrClosed
	}
	lf := l.files[prefix]
	if lf == nil {
		lf = &logFile{prefix: prefix, path: filepath.Join(l.dir, l.FileName(prefix))}
		lf.elem = l.lru.PushFront(lf)
		l.files[prefix] = lf
	} else {
		l.lru.MoveToFront(lf.elem)
	}
	lf.users++
	return lf, l.evictLocked(), nil
}

// release marks lf no longer in use by one caller and returns the files
// evicted now that it may be.
func (l *Logger) release(lf *logFile) []*logFile {
	l.mu.Lock()
	defer l.mu.Unlock()
	lf.users--
	return l.evictLocked()
}

// evictLocked takes least recently used files that no Log call holds out of
// l.files until at most maxOpen are left.
func (l *Logger) evictLocked() []*logFile {
	var victims []*logFile
	for e := l.lru.Back(); e != nil && len(l.files) > l.maxOpen; {
		prev := e.Prev()
		if lf := e.Value.(*logFile); lf.users == 0 {
			l.lru.Remove(e)
			lf.elem = nil
			delete(l.files, lf.prefix)
			victims = append(victims, lf)
		}
		e = prev
	}
	return victims
}

// closeFiles closes files taken out of l.files. A close error loses no line
// (every line was written whole) and has no caller to go to, so it is logged
// and counted.
func (l *Logger) closeFiles(files []*logFile) {
	for _, lf := range files {
		if err := l.closeFile(lf); err != nil {
			l.errs.Inc()
			l.logger.Warn("closing crawl log file", "file", lf.path, "err", err)
		}
	}
}

func (l *Logger) closeFile(lf *logFile) error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	lf.gone = true
	if lf.f == nil {
		return nil
	}
	err := lf.f.Close()
	lf.f = nil
	l.openFiles.Dec()
	return err
}

func (l *Logger) writeLine(lf *logFile, line []byte) error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.gone {
		return ErrClosed
	}
	path := lf.path
	if lf.f == nil {
		f, err := l.openFile(path)
		if err != nil {
			return fmt.Errorf("opening crawl log: %w", err)
		}
		lf.f = f
		l.openFiles.Inc()
		l.logger.Debug("opened crawl log file", "file", path)
	}
	if lf.needsBreak {
		// End the fragment a failed write left, so that it stays a
		// (malformed) line of its own instead of swallowing this one.
		if _, err := lf.f.Write([]byte{'\n'}); err != nil {
			return fmt.Errorf("writing crawl log %s: %w", path, err)
		}
		lf.needsBreak = false
	}
	n, err := lf.f.Write(line)
	if err == nil {
		return nil
	}
	if n > 0 {
		// os.File.Write only stops short with an error (ENOSPC, EFBIG,
		// EIO): take the fragment back out.
		if terr := truncateTail(lf.f, int64(n)); terr != nil {
			lf.needsBreak = true
			l.logger.Error("removing a partly written crawl log line", "file", path, "err", terr)
		}
	}
	return fmt.Errorf("writing crawl log %s: %w", path, err)
}

func truncateTail(f appendFile, n int64) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() < n {
		return fmt.Errorf("file is %d bytes, shorter than the %d written", fi.Size(), n)
	}
	return f.Truncate(fi.Size() - n)
}

// Close closes every file, after the Log calls writing at that moment.
// Later Log calls return ErrClosed. Close is idempotent.
func (l *Logger) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	files := make([]*logFile, 0, len(l.files))
	for e := l.lru.Front(); e != nil; e = e.Next() {
		lf := e.Value.(*logFile)
		lf.elem = nil
		files = append(files, lf)
	}
	l.lru.Init()
	clear(l.files)
	l.mu.Unlock()

	var errs []error
	for _, lf := range files {
		if err := l.closeFile(lf); err != nil {
			errs = append(errs, fmt.Errorf("closing crawl log %s: %w", lf.path, err))
		}
	}
	return errors.Join(errs...)
}
