// Package config reads warcproxy's settings from the command line and an
// optional YAML file.
//
// Flags keep warcprox's names and short aliases (-p, -d, -z, --size,
// --max-threads, ...) so its command lines run unchanged. A setting's YAML
// key is its long flag name. Precedence, lowest first: Default(), the file
// named by --config.file, flags given on the command line.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/warcproxy/warcproxy/internal/digest"
	"github.com/warcproxy/warcproxy/internal/store"
)

// Config holds every setting of a warcproxy process. Sizes are in bytes.
// The comments name the flag; see Usage or docs/configuration.md for what
// each one means.
type Config struct {
	Address string // --address, -b
	// MetricsAddress, if set, is a second listener for /metrics and /status.
	MetricsAddress string // --metrics-address
	Pprof          bool   // --pprof
	Port           int    // --port, -p; 0 picks a free port
	Dir            string // --dir, -d
	Prefix         string // --prefix, -n; "-" proxies without archiving
	WARCFilename   string // --warc-filename, without extension
	// NoWARCOpenSuffix writes files under their final names while open.
	NoWARCOpenSuffix bool // --no-warc-open-suffix

	Compression     string // --compression: gzip, zstd or none; --gzip (-z) and --gzip=false set it too
	GzipLevel       int    // --gzip-level; 0 is the library default
	ZstdLevel       int    // --zstd-level: the zstd command's 1 to 22
	ZstdDictionary  string // --zstd-dictionary: a file `zstd --train` wrote; empty: none
	WARCVersion     string // --warc-version: "1.0" or "1.1"
	WARCProtocol    bool   // --warc-protocol: WARC-Protocol and WARC-Cipher-Suite fields
	DigestAlgorithm string // --digest-algorithm, -g: "sha1" or "sha256"
	Base32          bool   // --base32

	CACert   string // --cacert, -c
	CertsDir string // --certs-dir; empty keeps leaf certificates in memory

	MaxConns        int           // --max-conns, --max-threads
	ConnWaitTimeout time.Duration // --conn-wait-timeout
	IdleTimeout     time.Duration // --idle-timeout
	HeaderTimeout   time.Duration // --header-timeout
	MaxHeaderBytes  int64         // --max-header-bytes
	HTTP2           bool          // --http2: offer h2 to clients in CONNECT tunnels
	HTTP2MaxStreams int           // --http2-max-streams, per client connection

	WriterWorkers    int           // --writer-workers, --writer-threads
	QueueSize        int           // --queue-size
	QueueMaxBytes    int64         // --queue-max-bytes
	QueueFullTimeout time.Duration // --queue-full-timeout

	RolloverSize     int64         // --rollover-size, -s, --size
	RolloverIdleTime time.Duration // --rollover-idle-time; 0 never
	MaxOpenWARCs     int           // --max-open-warcs; 0 no bound

	TmpFileMaxMemory int64  // --tmp-file-max-memory
	TmpDir           string // --tmp-dir; empty means inside Dir
	SpoolMemory      int64  // --spool-memory
	MaxResourceSize  int64  // --max-resource-size; 0 unlimited

	// WebSocket messages: recorded as resource records beside the
	// handshake, cut into records by size and time.
	WebSocketMessages   bool          // --websocket-messages
	WebSocketRecordSize int64         // --websocket-record-size
	WebSocketRecordTime time.Duration // --websocket-record-time

	SocketTimeout     time.Duration // --socket-timeout
	FetchTimeout      time.Duration // --fetch-timeout; 0 none
	MethodFilter      []string      // --method-filter, in capitals; empty archives every method
	VerifyUpstreamTLS bool          // --verify-upstream-tls
	// UnsafeLegacyRenegotiation lets origins renegotiate TLS (1.2 and
	// older) as often as they ask, warcprox's --unsafe-legacy-renegotiation.
	UnsafeLegacyRenegotiation bool // --unsafe-legacy-renegotiation
	// Security.
	ProxyAuth          string // --proxy-auth user:password
	ProxyAuthFile      string // --proxy-auth-file; one user:password per line
	Jobs               string // --jobs FILE: crawl jobs chosen by proxy credentials or port
	DenyPrivateTargets bool   // --deny-private-targets

	ShutdownTimeout time.Duration // --shutdown-timeout

	// Upstream route: at most one of SOCKSProxy and UpstreamProxy.
	SOCKSProxy         string // --socks-proxy host:port
	SOCKSProxyUsername string // --socks-proxy-username
	SOCKSProxyPassword string // --socks-proxy-password; never logged
	OnionTorSOCKSProxy string // --onion-tor-socks-proxy host:port, for .onion hosts
	UpstreamProxy      string // --upstream-proxy http://[user:pass@]host:port

	// Backend specs (none, embedded:PATH, redis://..., redis+cluster://...).
	DedupDB             string        // --dedup-db, --dedup-db-file, -j
	StatsDB             string        // --stats-db, --stats-db-file
	StoreTimeout        time.Duration // --store-timeout: each dedup/stats store call on the request path
	DedupMinTextSize    int64         // --dedup-min-text-size
	DedupMinBinarySize  int64         // --dedup-min-binary-size
	DedupOnlyWithBucket bool          // --dedup-only-with-bucket
	DedupURLTable       bool          // --dedup-url-table: Redis keeps full URLs for cross-URL hits
	DedupShardBits      int           // --dedup-shard-bits: Redis hashes per bucket, unless the index's marker says
	BlackoutPeriod      time.Duration // --blackout-period; 0 off
	// CDX server dedup (warcprox's --cdxserver-dedup): looked up after the
	// local dedup store finds nothing.
	CDXServerDedup           string        // --cdxserver-dedup URL; empty: off
	CDXServerDedupCookies    string        // --cdxserver-dedup-cookies
	CDXServerDedupMaxThreads int           // --cdxserver-dedup-max-threads
	CDXServerDedupTimeout    time.Duration // --cdxserver-dedup-timeout
	CrawlLogDir              string        // --crawl-log-dir; empty: no crawl log
	CDXJ                     bool          // --cdxj
	SubdirPrefix             bool          // --subdir-prefix

	// Shipping closed files to S3-compatible object storage.
	UploadTo        string // --upload-to s3://BUCKET/PREFIX; empty: files stay on disk
	UploadEndpoint  string // --upload-endpoint; empty: AWS
	UploadCAFile    string // --upload-ca-file
	UploadWorkers   int    // --upload-workers
	UploadPartSize  int64  // --upload-part-size
	UploadKeepLocal bool   // --upload-keep-local
	UploadWebhook   string // --upload-webhook: http(s):// or redis://host:port/db/key

	LogLevel  string // --log-level: debug|info|warn|error
	LogFormat string // --log-format: text|json

	ConfigFile  string // --config.file; the YAML file read, if any
	ShowVersion bool   // --version; Parse skips the file and Validate
}

// Default returns the settings used when neither a flag nor the config file
// gives one.
func Default() Config {
	return Config{
		Address:      "127.0.0.1",
		Port:         8000,
		Dir:          "./warcs",
		Prefix:       "WARCPROX",
		WARCFilename: "{prefix}-{timestamp17}-{serialno}-{randomtoken}",

		Compression:     "gzip",
		ZstdLevel:       DefaultZstdLevel,
		WARCVersion:     "1.0",
		WARCProtocol:    true,
		DigestAlgorithm: "sha1",
		Base32:          true,

		CACert: "./warcproxy-ca.pem",

		MaxConns:        1000,
		HTTP2:           true,
		HTTP2MaxStreams: 100,
		ConnWaitTimeout: 30 * time.Second,
		IdleTimeout:     2 * time.Minute,
		HeaderTimeout:   30 * time.Second,
		MaxHeaderBytes:  4 << 20,

		WriterWorkers:    2,
		MaxOpenWARCs:     256,
		QueueSize:        1000,
		QueueMaxBytes:    256 << 20,
		QueueFullTimeout: 10 * time.Second,

		RolloverSize: 1_000_000_000,

		TmpFileMaxMemory: 512 << 10,
		SpoolMemory:      32 << 20,

		WebSocketMessages:   true,
		WebSocketRecordSize: 100_000_000,
		WebSocketRecordTime: 10 * time.Minute,

		SocketTimeout:   60 * time.Second,
		FetchTimeout:    20 * time.Minute,
		ShutdownTimeout: 30 * time.Second,

		DedupDB:      DefaultDB,
		StatsDB:      DefaultDB,
		StoreTimeout: 500 * time.Millisecond,

		DedupURLTable:            true,
		DedupShardBits:           20,
		CDXServerDedupMaxThreads: 50,
		CDXServerDedupTimeout:    2 * time.Second,

		UploadWorkers:  2,
		UploadPartSize: 100 << 20,

		LogLevel:  "info",
		LogFormat: "text",
	}
}

// DefaultDB is where dedup and stats live unless told otherwise: one local
// file, no server.
const DefaultDB = "embedded:./warcproxy.db"

// Choices of the enumerated settings.
var (
	warcVersions = []string{"1.0", "1.1"}
	digestAlgs   = []string{string(digest.SHA1), string(digest.SHA256)}
	logLevels    = []string{"debug", "info", "warn", "error"}
	logFormats   = []string{"text", "json"}
)

// filenamePlaceholders are the names a --warc-filename template may use.
var filenamePlaceholders = []string{
	"prefix", "timestamp14", "timestamp17", "serialno", "randomtoken",
	"hostname", "shorthostname", "port",
}

// Validate reports every setting out of its range, each problem on its own
// line naming the flag. Parse calls it; call it yourself on a Config built in
// code.
func (c Config) Validate() error {
	var p problems
	c.validateStores(&p)
	c.validateListen(&p)
	c.validateOutput(&p)
	c.validateLimits(&p)
	c.validateRoutes(&p)
	c.validateUpload(&p)
	p.oneOf("log-level", c.LogLevel, logLevels)
	p.oneOf("log-format", c.LogFormat, logFormats)
	return errors.Join(p...)
}

// problems collects what Validate finds, each naming its flag.
type problems []error

func (p *problems) bad(flag, format string, args ...any) {
	*p = append(*p, fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, args...)))
}

// badTogether is a problem with flags given together, whose message
// names them itself.
func (p *problems) badTogether(msg string) {
	*p = append(*p, errors.New(msg))
}

func (p *problems) positive(flag string, d time.Duration) {
	if d <= 0 {
		p.bad(flag, "must be more than 0, got %s", formatDuration(d))
	}
}

func (p *problems) notNegative(flag string, n int64) {
	if n < 0 {
		p.bad(flag, "must not be negative, got %d", n)
	}
}

func (p *problems) atLeastOne(flag string, n int) {
	if n < 1 {
		p.bad(flag, "must be at least 1, got %d", n)
	}
}

func (p *problems) oneOf(flag, v string, choices []string) {
	if !slices.Contains(choices, v) {
		p.bad(flag, "%q is not one of %s", v, strings.Join(choices, ", "))
	}
}

// validateStores checks the dedup and stats stores and the CDX server.
func (c Config) validateStores(p *problems) {
	for flag, v := range map[string]string{"dedup-db": c.DedupDB, "stats-db": c.StatsDB} {
		if _, err := store.Parse(v); err != nil {
			p.bad(flag, "%v", err)
		}
	}
	p.positive("store-timeout", c.StoreTimeout)
	p.notNegative("dedup-min-text-size", c.DedupMinTextSize)
	p.notNegative("dedup-min-binary-size", c.DedupMinBinarySize)
	if c.BlackoutPeriod < 0 {
		p.bad("blackout-period", "must not be negative (0 turns it off), got %s", c.BlackoutPeriod)
	}
	if c.DedupShardBits < 1 || c.DedupShardBits > 24 {
		p.bad("dedup-shard-bits", "want 1 to 24, got %d", c.DedupShardBits)
	}
	p.atLeastOne("cdxserver-dedup-max-threads", c.CDXServerDedupMaxThreads)
	p.positive("cdxserver-dedup-timeout", c.CDXServerDedupTimeout)
	if c.CDXServerDedup != "" {
		if u, err := url.Parse(c.CDXServerDedup); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.bad("cdxserver-dedup", "%q: want the CDX API's http:// or https:// URL, e.g. https://web.archive.org/cdx/search", c.CDXServerDedup)
		}
		if c.DigestAlgorithm != string(digest.SHA1) {
			p.bad("cdxserver-dedup", "needs --digest-algorithm sha1 (got %s): CDX servers index SHA-1 payload digests, so other digests never match", c.DigestAlgorithm)
		}
	}
	if strings.ContainsAny(c.CDXServerDedupCookies, "\r\n") {
		p.bad("cdxserver-dedup-cookies", "must not contain line breaks")
	}
}

// validateListen checks where the proxy and its metrics listen, and who
// may use them.
func (c Config) validateListen(p *problems) {
	if c.Pprof && c.MetricsAddress == "" {
		p.bad("pprof", "needs --metrics-address: the profiler is never served on the proxy port")
	}
	if c.MetricsAddress != "" {
		if _, _, ok := splitListenAddress(c.MetricsAddress); !ok {
			p.bad("metrics-address", "%q: want host:port with a port from 0 to 65535, e.g. 127.0.0.1:9100", c.MetricsAddress)
		}
	}
	if host, _, err := net.SplitHostPort(c.Address); err == nil {
		p.bad("address", "%q includes a port; give the host only (%q) and the port with --port", c.Address, host)
	} else if strings.HasPrefix(c.Address, "[") {
		p.bad("address", "%q: write an IPv6 address without brackets", c.Address)
	}
	if c.Port < 0 || c.Port > 65535 {
		p.bad("port", "must be between 0 and 65535, got %d", c.Port)
	} else {
		checkListeners(p, c.listeners())
	}
	if c.CACert == "" {
		p.bad("cacert", "must not be empty")
	}
	if c.ProxyAuth != "" && !strings.Contains(c.ProxyAuth, ":") {
		p.bad("proxy-auth", "want user:password")
	}
}

// validateOutput checks what the WARC files are named and hold.
func (c Config) validateOutput(p *problems) {
	if c.Dir == "" {
		p.bad("dir", "must not be empty")
	}
	switch {
	case c.Prefix == "":
		p.bad("prefix", "must not be empty (use - to proxy without archiving)")
	case c.Prefix != "-" && strings.ContainsAny(c.Prefix, "/\\\x00"):
		p.bad("prefix", "%q must not contain / or \\ (it becomes part of a file name)", c.Prefix)
	// The writer refuses these too (as it does a Warcprox-Meta warc-prefix),
	// but only when it starts: say so here, as a bad flag.
	case strings.HasPrefix(c.Prefix, "."):
		p.bad("prefix", "%q must not start with a dot (it becomes part of a file name)", c.Prefix)
	case len(c.Prefix) > 200:
		p.bad("prefix", "must be at most 200 bytes, got %d", len(c.Prefix))
	case strings.ContainsFunc(c.Prefix, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		p.bad("prefix", "%q must not contain control characters", c.Prefix)
	}
	if err := checkFilenameTemplate(c.WARCFilename); err != nil {
		p.bad("warc-filename", "%v", err)
	}
	c.validateCompression(p)
	p.oneOf("warc-version", c.WARCVersion, warcVersions)
	if _, err := digest.Parse(c.DigestAlgorithm); err != nil {
		p.bad("digest-algorithm", "%q is not one of %s", c.DigestAlgorithm, strings.Join(digestAlgs, ", "))
	}
	p.atLeastOne("writer-workers", c.WriterWorkers)
	if c.RolloverSize <= 0 {
		p.bad("rollover-size", "must be more than 0, got %d", c.RolloverSize)
	}
	if c.RolloverIdleTime < 0 {
		p.bad("rollover-idle-time", "must not be negative (0 turns it off), got %s", c.RolloverIdleTime)
	}
	if c.MaxOpenWARCs < 0 {
		p.bad("max-open-warcs", "must not be negative (0: no bound), got %d", c.MaxOpenWARCs)
	}
}

// validateLimits checks connection, queue, memory and time limits.
func (c Config) validateLimits(p *problems) {
	p.atLeastOne("max-conns", c.MaxConns)
	p.atLeastOne("http2-max-streams", c.HTTP2MaxStreams)
	p.positive("conn-wait-timeout", c.ConnWaitTimeout)
	p.positive("idle-timeout", c.IdleTimeout)
	p.positive("header-timeout", c.HeaderTimeout)
	if c.MaxHeaderBytes <= 0 {
		p.bad("max-header-bytes", "must be more than 0, got %d", c.MaxHeaderBytes)
	}
	p.atLeastOne("queue-size", c.QueueSize)
	p.positive("queue-full-timeout", c.QueueFullTimeout)
	p.notNegative("tmp-file-max-memory", c.TmpFileMaxMemory)
	p.notNegative("spool-memory", c.SpoolMemory)
	p.notNegative("max-resource-size", c.MaxResourceSize)
	if c.WebSocketRecordSize < 4096 {
		p.bad("websocket-record-size", "must be at least 4KB (a record holds at least one message), got %d", c.WebSocketRecordSize)
	}
	p.positive("websocket-record-time", c.WebSocketRecordTime)
	p.positive("socket-timeout", c.SocketTimeout)
	if c.FetchTimeout < 0 {
		p.bad("fetch-timeout", "must not be negative (0 turns it off), got %s", c.FetchTimeout)
	}
	for _, m := range c.MethodFilter {
		if !httpguts.ValidHeaderFieldName(m) {
			p.bad("method-filter", "%q is not an HTTP method (give one method per flag: --method-filter GET --method-filter POST)", m)
		}
	}
	p.positive("shutdown-timeout", c.ShutdownTimeout)
}

// checkFilenameTemplate accepts what the writer expands: Python str.format
// syntax as in warcprox, "{name}" with a known name, "{{" and "}}" for
// literal braces. The text must not make a path.
func checkFilenameTemplate(t string) error {
	if t == "" {
		return errors.New("must not be empty")
	}
	if strings.ContainsAny(t, "/\\\x00") {
		return fmt.Errorf("%q must not contain / or \\ (it is a file name, see --dir)", t)
	}
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case (c == '{' || c == '}') && i+1 < len(t) && t[i+1] == c:
			i++
		case c == '{':
			end := strings.IndexByte(t[i:], '}')
			if end < 0 {
				return fmt.Errorf("%q: unclosed { (write {{ for a literal brace)", t)
			}
			name := t[i+1 : i+end]
			if !slices.Contains(filenamePlaceholders, name) {
				return fmt.Errorf("%q: unknown placeholder {%s} (want one of {%s})", t, name, strings.Join(filenamePlaceholders, "} {"))
			}
			i += end
		case c == '}':
			return fmt.Errorf("%q: single } (write }} for a literal brace)", t)
		}
	}
	return nil
}
