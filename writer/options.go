package writer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/warcproxy/warcproxy/internal/digest"
	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// Defaults applied by New to zero Options fields.
const (
	DefaultPrefix           = "WARCPROX"
	DefaultFilenameTemplate = "{prefix}-{timestamp17}-{serialno}-{randomtoken}"
	DefaultWorkers          = 2
	DefaultQueueSize        = 500
	DefaultRolloverSize     = 1_000_000_000
	DefaultSoftware         = "warcproxy"
	DefaultZstdLevel        = 3 // the zstd command's
)

// Retry back-off after a write error: the first wait, doubled after every
// further failure of the same worker up to the maximum.
const (
	defaultBackoffMin = 100 * time.Millisecond
	defaultBackoffMax = 10 * time.Second
)

// Options configures a Pool. Zero values get the defaults documented per
// field.
type Options struct {
	// Dir receives the WARC files; it is created if missing. Required.
	Dir string
	// Registerer, if not nil, gets the pool's Prometheus metrics.
	Registerer prometheus.Registerer
	// Prefix is used for captures whose Prefix is empty. Default
	// DefaultPrefix.
	Prefix string
	// SubdirPrefix writes each prefix's files into Dir/prefix (warcprox's
	// --subdir-prefix), created when first needed.
	SubdirPrefix bool
	// FilenameTemplate names files with warcprox's placeholders {prefix}
	// {timestamp14} {timestamp17} {serialno} {randomtoken} {hostname}
	// {shorthostname} {port}; "{{" and "}}" are literal braces. ".warc",
	// ".warc.gz" or ".warc.zst" is appended, plus ".open" while the file
	// is written (unless NoOpenSuffix). Default DefaultFilenameTemplate.
	FilenameTemplate string
	// NoOpenSuffix writes each file under its final name from the start
	// (warcprox's --no-warc-open-suffix) instead of NAME.open renamed at
	// close. The flock is held all the same; Recover needs
	// RecoverOptions.FinalNames to find such files after a crash.
	NoOpenSuffix bool
	// Compression is how records are compressed: warcscan.Gzip (.warc.gz,
	// every record its own gzip member), warcscan.Zstd (.warc.zst, every
	// record its own zstd frame, as the WARC-zstd specification lays it
	// out) or warcscan.None (.warc). nil means None.
	Compression warcscan.Codec
	// GzipLevel is a klauspost/compress/gzip level (-3 to 9); 0 means the
	// library's default, so level 0 (stored, no compression) cannot be
	// chosen. 1 is the fastest compressing level.
	GzipLevel int
	// ZstdLevel is a zstd command-line level, 1 to 22, mapped to the
	// nearest of klauspost's four encoder levels (ZstdLevel); 0 means 3,
	// the command's default.
	ZstdLevel int
	// ZstdDictionary, with Zstd, is a dictionary in zstd's format (as
	// `zstd --train` writes it, with an ID that is not 0): every file then
	// starts with it in a dictionary frame, and every frame uses it.
	ZstdDictionary []byte
	// WARCVersion is "1.0" (default) or "1.1". WARC-Date carries seconds in
	// 1.0 and microseconds in 1.1.
	WARCVersion string
	// Digest is the algorithm for digests the pool computes itself (the
	// warcinfo record, records with an empty BlockDigest). Default sha1.
	Digest digest.Algorithm
	// Base32 formats those digests in base32 instead of hex.
	Base32 bool
	// Workers is the number of writer goroutines, each with its own open
	// file per prefix. Default DefaultWorkers.
	Workers int
	// QueueSize bounds the captures waiting for a worker. Default
	// DefaultQueueSize.
	QueueSize int
	// QueueMaxBytes, if > 0, also bounds the block bytes of the captures
	// waiting for a worker, so that large bodies cannot pile up a backlog
	// (spooled on disk) that takes long to drain. A capture larger than
	// the bound counts as the bound.
	QueueMaxBytes int64
	// RolloverSize closes a file once it holds this many bytes; a capture
	// at least this large gets a file of its own. Default
	// DefaultRolloverSize.
	RolloverSize int64
	// RolloverIdle closes a worker's file after this long without writes;
	// 0 keeps files open until they reach RolloverSize or the pool closes.
	RolloverIdle time.Duration
	// MaxOpenFiles bounds the WARC files open at once, all workers
	// together (each worker gets an equal share, at least one). A worker
	// that needs a file for one more prefix first closes its least
	// recently written one, as at rollover. Crawlers choose prefixes
	// (Warcprox-Meta "warc-prefix"), so without a bound their number, and
	// the file descriptors they hold, would be theirs to choose. 0: no
	// bound.
	MaxOpenFiles int
	// Software is the warcinfo "software" field, e.g. "warcproxy/1.2.3".
	// Default DefaultSoftware.
	Software string
	// Hostname is used for {hostname}, {shorthostname} and the warcinfo
	// "hostname" field. Default os.Hostname().
	Hostname string
	// Port is used for {port}.
	Port int
	// WarcinfoFields are further warcinfo fields (operator, isPartOf, ...),
	// written after the standard ones in this order.
	WarcinfoFields []Field
	// FS is the file layer; nil means the operating system's.
	FS FS
	// OnClose, if set, is called with the path of each WARC file once it is
	// closed and renamed (to index it, for instance). It runs on a writer
	// goroutine: hand the work off rather than do it there.
	OnClose func(path string)

	// Test hooks: retry back-off bounds (zero means the defaults).
	backoffMin, backoffMax time.Duration
}

// FS is the file layer the pool writes through. Tests inject faults with it.
type FS interface {
	MkdirAll(path string, perm fs.FileMode) error
	// OpenFile is called with os.O_WRONLY|os.O_CREATE|os.O_EXCL.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Stat(name string) (fs.FileInfo, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
}

// File is an open WARC file. The pool writes it at explicit offsets, cuts it
// back with Truncate after a failed write and syncs it before closing. If
// the File also implements syscall.Conn (as *os.File does), the pool holds
// an exclusive flock on it while it is open.
type File interface {
	io.WriterAt
	Truncate(size int64) error
	Sync() error
	Close() error
}

// OSFS is the operating system's file layer.
type OSFS struct{}

var _ FS = OSFS{}

// MkdirAll calls os.MkdirAll.
func (OSFS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }

// OpenFile calls os.OpenFile.
func (OSFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Stat calls os.Stat.
func (OSFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// Rename calls os.Rename.
func (OSFS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// Remove calls os.Remove.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// withDefaults validates o and fills in defaults.
func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		return o, errors.New("no warc directory given")
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if err := checkPrefix(o.Prefix); err != nil {
		return o, err
	}
	if o.FilenameTemplate == "" {
		o.FilenameTemplate = DefaultFilenameTemplate
	}
	switch o.WARCVersion {
	case "":
		o.WARCVersion = "1.0"
	case "1.0", "1.1":
	default:
		return o, fmt.Errorf("unsupported warc version %q (want 1.0 or 1.1)", o.WARCVersion)
	}
	if o.Digest == "" {
		o.Digest = digest.SHA1
	}
	if _, err := digest.Parse(string(o.Digest)); err != nil {
		return o, err
	}
	if err := o.compressionDefaults(); err != nil {
		return o, err
	}
	switch {
	case o.Workers < 0:
		return o, fmt.Errorf("writer workers must be positive, got %d", o.Workers)
	case o.Workers == 0:
		o.Workers = DefaultWorkers
	}
	switch {
	case o.QueueSize < 0:
		return o, fmt.Errorf("queue size must be positive, got %d", o.QueueSize)
	case o.QueueSize == 0:
		o.QueueSize = DefaultQueueSize
	}
	switch {
	case o.RolloverSize < 0:
		return o, fmt.Errorf("rollover size must be positive, got %d", o.RolloverSize)
	case o.RolloverSize == 0:
		o.RolloverSize = DefaultRolloverSize
	}
	if o.RolloverIdle < 0 {
		return o, fmt.Errorf("rollover idle time must not be negative, got %v", o.RolloverIdle)
	}
	if o.MaxOpenFiles < 0 {
		return o, fmt.Errorf("max open files must not be negative (0: no bound), got %d", o.MaxOpenFiles)
	}
	if o.Software == "" {
		o.Software = DefaultSoftware
	}
	if o.Hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return o, fmt.Errorf("looking up hostname: %w", err)
		}
		o.Hostname = h
	}
	if o.Port < 0 || o.Port > 65535 {
		return o, fmt.Errorf("port %d out of range", o.Port)
	}
	for _, f := range o.WarcinfoFields {
		if err := checkFieldName(f.Name); err != nil {
			return o, fmt.Errorf("warcinfo field: %w", err)
		}
		if err := checkValue(f.Value); err != nil {
			return o, fmt.Errorf("warcinfo field %s: %w", f.Name, err)
		}
	}
	for _, s := range []string{o.Software, o.Hostname} {
		if err := checkValue(s); err != nil {
			return o, fmt.Errorf("warcinfo: %w", err)
		}
	}
	if o.FS == nil {
		o.FS = OSFS{}
	}
	if o.backoffMin <= 0 {
		o.backoffMin = defaultBackoffMin
	}
	if o.backoffMax < o.backoffMin {
		o.backoffMax = max(defaultBackoffMax, o.backoffMin)
	}
	return o, nil
}

// compressionDefaults checks the compression settings and fills in their
// defaults.
func (o *Options) compressionDefaults() error {
	switch o.Compression {
	case nil:
		o.Compression = warcscan.None
	case warcscan.None, warcscan.Gzip, warcscan.Zstd:
	default:
		return fmt.Errorf("unsupported compression %q", o.Compression.Name())
	}
	if o.GzipLevel == 0 {
		o.GzipLevel = gzip.DefaultCompression
	}
	if _, err := gzip.NewWriterLevel(io.Discard, o.GzipLevel); err != nil {
		return fmt.Errorf("gzip level %d: %w", o.GzipLevel, err)
	}
	if o.ZstdLevel == 0 {
		o.ZstdLevel = DefaultZstdLevel
	}
	if o.ZstdLevel < 1 || o.ZstdLevel > 22 {
		return fmt.Errorf("zstd level %d: want 1 to 22", o.ZstdLevel)
	}
	if o.ZstdDictionary != nil {
		if o.Compression != warcscan.Zstd {
			return fmt.Errorf("a zstd dictionary with compression %s", o.Compression.Name())
		}
		if _, err := warcscan.ZstdDictionaryID(o.ZstdDictionary); err != nil {
			return fmt.Errorf("zstd dictionary: %w", err)
		}
	}
	return nil
}

// CheckPrefix reports whether p can name a WARC file series (no path
// separators, no leading dot, no control characters, at most 200 bytes).
func CheckPrefix(p string) error { return checkPrefix(p) }

// checkPrefix rejects prefixes that are not a plain file name part.
// Prefixes come from clients (Warcprox-Meta), so this is a security check.
func checkPrefix(p string) error {
	if p == "" || p == "." || p == ".." || len(p) > 200 ||
		strings.ContainsAny(p, "/\\\x00") || strings.HasPrefix(p, ".") {
		return fmt.Errorf("invalid warc prefix %q", p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f {
			return fmt.Errorf("invalid warc prefix %q", p)
		}
	}
	return nil
}
