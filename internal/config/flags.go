package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// option is one setting: its flag names, its YAML key and its help. The
// table built by options is the single list that the flag set, the config
// file, Usage and the documentation tests read.
type option struct {
	name    string   // long flag name; also the YAML key when inFile
	aliases []string // other names, mostly warcprox's ("p", "max-threads")
	metavar string   // shown after the names in Usage; "" for booleans
	help    string
	value   flag.Value
	inFile  bool // settable in the config file
}

// group is a heading of Usage and the options under it.
type group struct {
	title   string
	options []*option
}

// shorthands are warcprox's switches that stand for another setting (the
// log level; --gzip, the compression), kept out of Config: parse resolves
// them.
type shorthands struct {
	verbose, quiet, trace bool
	gzip                  optionalBool // --gzip, -z
	compressionSet        bool         // --compression was given, as a flag or in the file
}

// groups binds every option to a field of c (or of sh) and returns them in
// the order Usage prints them.
func groups(c *Config, sh *shorthands) []group {
	return []group{
		{"Listener", []*option{
			{name: "address", aliases: []string{"b"}, metavar: "host", inFile: true, value: stringValue{&c.Address},
				help: `Address to listen on; 0.0.0.0 listens on every IPv4 interface, "" or :: on every IPv4 and IPv6 one.`},
			{name: "port", aliases: []string{"p"}, metavar: "int", inFile: true, value: intValue{&c.Port},
				help: "Port to listen on; 0 picks a free one."},
			{name: "metrics-address", metavar: "host:port", inFile: true, value: stringValue{&c.MetricsAddress},
				help: "Serve /metrics (Prometheus) and /status on this address instead of the proxy port, e.g. 127.0.0.1:9100. Without it they are served on the proxy port (origin-form requests), where they take a connection slot."},
			{name: "pprof", inFile: true, value: boolValue{&c.Pprof},
				help: "Serve Go's profiler under /debug/pprof/ on --metrics-address (which it needs), for profiling under load."},
		}},
		{"WARC files", []*option{
			{name: "dir", aliases: []string{"d"}, metavar: "dir", inFile: true, value: stringValue{&c.Dir},
				help: "Directory the WARC files are written to; created if missing."},
			{name: "prefix", aliases: []string{"n"}, metavar: "string", inFile: true, value: stringValue{&c.Prefix},
				help: "WARC file name prefix, the {prefix} of --warc-filename. As in warcprox, - proxies without archiving, except requests whose Warcprox-Meta header names a warc-prefix."},
			{name: "warc-filename", metavar: "template", inFile: true, value: stringValue{&c.WARCFilename},
				help: "WARC file name without its extension (.warc.gz, .warc.zst or .warc is added, as --compression says). Placeholders: " +
					"{prefix} {timestamp14} {timestamp17} {serialno} {randomtoken} {hostname} {shorthostname} {port}; " +
					"{{ and }} stand for literal braces."},
			{name: "no-warc-open-suffix", inFile: true, value: boolValue{&c.NoWARCOpenSuffix},
				help: "Write each WARC file under its final name while it is open, instead of NAME.warc.gz.open renamed when closed (warcprox's option). " +
					"The file is still locked while written; after a crash, the next start cuts back every unlocked file that does not end on a whole record."},
			{name: "compression", metavar: "name", inFile: true, value: compressionValue{enumValue{&c.Compression, compressions}, &sh.compressionSet},
				help: "How each record is compressed: gzip (.warc.gz, every record its own gzip member), zstd (.warc.zst, every record its own zstd frame, as the WARC-zstd specification lays it out; few readers know it yet: zstd -d turns a file into a .warc they read) or none (.warc)."},
			{name: "gzip", aliases: []string{"z"}, inFile: true, value: gzipAlias{&sh.gzip},
				help: "Older name of --compression, kept for warcprox's command lines: --gzip (or -z) is --compression gzip (with --compression zstd it changes nothing), --gzip=false is --compression none."},
			{name: "gzip-level", metavar: "int", inFile: true, value: intValue{&c.GzipLevel},
				help: "gzip level from 1 (fastest) to 9 (smallest); 0 uses the compression library's default. Only with --compression gzip."},
			{name: "zstd-level", metavar: "int", inFile: true, value: intValue{&c.ZstdLevel},
				help: "zstd level as the zstd command counts them, 1 (fastest) to 22 (smallest), mapped to the nearest of the compression library's four: 1-2 fastest, 3-5 default, 6-9 better, 10-22 best. Only with --compression zstd."},
			{name: "zstd-dictionary", metavar: "file", inFile: true, value: stringValue{&c.ZstdDictionary},
				help: "A zstd dictionary (as `zstd --train` writes it) to compress every record with: each .warc.zst file then starts with it, in the WARC-zstd dictionary frame, and readers need nothing else. Helps most with small records. Only with --compression zstd."},
			{name: "warc-version", metavar: "version", inFile: true, value: enumValue{&c.WARCVersion, warcVersions},
				help: "WARC version of the records written: 1.0 or 1.1."},
			{name: "warc-protocol", inFile: true, value: boolValue{&c.WARCProtocol},
				help: "Say on each request, response and revisit record how it was fetched: a WARC-Protocol field per protocol (http/1.1, and tls/1.2 or tls/1.3 when TLS carried it) and WARC-Cipher-Suite (the IANA name) for TLS, as browsertrix-crawler, Wget-AT and Nutch write them. --warc-protocol=false leaves them out, for readers that choke on repeated fields."},
			{name: "digest-algorithm", aliases: []string{"g"}, metavar: "name", inFile: true, value: enumValue{&c.DigestAlgorithm, digestAlgs},
				help: "Algorithm of WARC-Block-Digest and WARC-Payload-Digest: sha1 or sha256."},
			{name: "base32", inFile: true, value: boolValue{&c.Base32},
				help: "Write digests in base32 (sha1:2Z4...), as most web archives do; --base32=false writes hex."},
			{name: "rollover-size", aliases: []string{"s", "size"}, metavar: "size", inFile: true, value: sizeValue{&c.RolloverSize},
				help: "Start a new WARC file once the current one reaches this size. Records are never split, so a file can pass it by one record."},
			{name: "rollover-idle-time", metavar: "duration", inFile: true, value: durationValue{&c.RolloverIdleTime},
				help: "Close a WARC file after this long without writes, so an idle proxy does not keep it open; 0 never does."},
			{name: "max-open-warcs", metavar: "int", inFile: true, value: intValue{&c.MaxOpenWARCs},
				help: "Most WARC files open at once, all writer workers together (each gets an equal share). Every WARC prefix a crawler names gets its own files; past the bound a worker closes its least recently written file, as at rollover, to open one for a new prefix. 0: no bound."},
			{name: "method-filter", metavar: "method", inFile: true, value: newListValue(&c.MethodFilter, true),
				help: "Archive only requests with this HTTP method (any case: get means GET); repeat the flag for more methods. Other requests are still proxied. By default every method is archived."},
			{name: "max-resource-size", metavar: "size", inFile: true, value: sizeValue{&c.MaxResourceSize},
				help: "Longest response recorded; past it the record is cut short and marked WARC-Truncated: length. 0 means no limit."},
			{name: "websocket-messages", inFile: true, value: boolValue{&c.WebSocketMessages},
				help: "Record the messages of WebSockets (plain and in TLS tunnels) as JSON lines in resource records beside the handshake's request and response, WARC-Resource-Type: websocket. --websocket-messages=false records the handshake only."},
			{name: "websocket-record-size", metavar: "size", inFile: true, value: sizeValue{&c.WebSocketRecordSize},
				help: "Cut a WebSocket's message record at this size: it is written, marked WARC-Truncated: length, and the next one starts. A single message longer than this ends the socket's recording."},
			{name: "websocket-record-time", metavar: "duration", inFile: true, value: durationValue{&c.WebSocketRecordTime},
				help: "Cut a WebSocket's message record once it has been open this long: it is written, marked WARC-Truncated: time, and the next one starts, so a socket open for hours reaches the WARC as it goes."},
		}},
		{"TLS", []*option{
			{name: "cacert", aliases: []string{"c"}, metavar: "file", inFile: true, value: stringValue{&c.CACert},
				help: "PEM file with the CA certificate and key that sign the certificates of intercepted HTTPS sites; created if missing. A copy without the key, for clients to trust, is written beside it with the extension .crt."},
			{name: "certs-dir", metavar: "dir", inFile: true, value: stringValue{&c.CertsDir},
				help: "Directory that keeps generated site certificates across restarts; empty keeps them in memory only."},
			{name: "verify-upstream-tls", inFile: true, value: boolValue{&c.VerifyUpstreamTLS},
				help: "Verify the certificates of upstream servers. Off by default, so an archive records what a site serves even when its certificate is bad."},
			{name: "unsafe-legacy-renegotiation", inFile: true, value: boolValue{&c.UnsafeLegacyRenegotiation},
				help: "Let upstream servers renegotiate TLS 1.2 and older connections whenever they ask, also without RFC 5746 (warcprox's option). Servers that lack RFC 5746 but do not renegotiate are reached without it. Off: a server's renegotiation request fails that fetch (502)."},
		}},
		{"Security", []*option{
			{name: "proxy-auth", metavar: "user:password", inFile: true, value: stringValue{&c.ProxyAuth},
				help: "Require clients to send Proxy-Authorization: Basic with this user and password (407 otherwise), for proxying and for /status and /metrics on the proxy port."},
			{name: "proxy-auth-file", metavar: "file", inFile: true, value: stringValue{&c.ProxyAuthFile},
				help: "Like --proxy-auth, with the accepted user:password pairs read from this file, one per line (blank lines and lines starting with # are skipped). Both may be given."},
			{name: "jobs", metavar: "file", inFile: true, value: stringValue{&c.Jobs},
				help: "YAML file of crawl jobs: a request belongs to a job by its proxy credentials (user name = job name) or by the job's own port, and the job's Warcprox-Meta applies to it (a request's own header replaces it field by field). Reloaded on SIGHUP. See docs/configuration.md."},
			{name: "deny-private-targets", inFile: true, value: boolValue{&c.DenyPrivateTargets},
				help: "Refuse (403) to fetch from loopback, private, link-local and CGNAT addresses, checked on the address actually dialed, so DNS names that resolve or rebind there are refused too. With a SOCKS or parent route, the target is checked before dialing (a name that does not resolve locally passes to the route). Off by default."},
		}},
		{"Connections and timeouts", []*option{
			{name: "max-conns", aliases: []string{"max-threads"}, metavar: "int", inFile: true, value: intValue{&c.MaxConns},
				help: "Client connections served at once; more wait for a free slot."},
			{name: "conn-wait-timeout", metavar: "duration", inFile: true, value: durationValue{&c.ConnWaitTimeout},
				help: "How long a connection waits for a slot when --max-conns are busy before it is answered 503."},
			{name: "idle-timeout", metavar: "duration", inFile: true, value: durationValue{&c.IdleTimeout},
				help: "Close a client keep-alive connection idle this long; until then it holds its slot."},
			{name: "header-timeout", metavar: "duration", inFile: true, value: durationValue{&c.HeaderTimeout},
				help: "Time a client has to send a request's headers."},
			{name: "max-header-bytes", metavar: "size", inFile: true, value: sizeValue{&c.MaxHeaderBytes},
				help: "Largest request header accepted; a larger one is answered 431."},
			{name: "http2", inFile: true, value: boolValue{&c.HTTP2},
				help: "Offer HTTP/2 (ALPN h2) to clients inside CONNECT tunnels; each stream is one exchange, fetched upstream over HTTP/1.1 and recorded as usual. On by default; --http2=false serves HTTP/1.1 only. Never on the plain proxy port (no h2c)."},
			{name: "http2-max-streams", metavar: "int", inFile: true, value: intValue{&c.HTTP2MaxStreams},
				help: "Streams one HTTP/2 client connection may have open at once; --max-conns still counts connections."},
			{name: "socket-timeout", metavar: "duration", inFile: true, value: durationValue{&c.SocketTimeout},
				help: "Timeout for connecting to an upstream server and for each read or write on the connection."},
			{name: "fetch-timeout", metavar: "duration", inFile: true, value: durationValue{&c.FetchTimeout},
				help: "Longest a whole fetch may take, from sending the request to the last byte of the response; a response still arriving then is cut, recorded as far as it came with WARC-Truncated: time, and the client's connection is aborted. 0: no limit."},
			{name: "shutdown-timeout", metavar: "duration", inFile: true, value: durationValue{&c.ShutdownTimeout},
				help: "On SIGINT or SIGTERM, the budget of the whole shutdown: exchanges in flight get three quarters of it, then are cut (written, marked truncated); the queue drains and files close by its end, then are shipped with --upload-to. Anything cut or left undone by then exits 1 (but files not yet shipped, which stay on disk for the next start); a second signal ends the budget at once."},
		}},
		{"Upstream route", []*option{
			{name: "socks-proxy", metavar: "host:port", inFile: true, value: stringValue{&c.SOCKSProxy},
				help: "Reach every origin through this SOCKS5 proxy (plain HTTP and CONNECT tunnels alike), sending it host names unresolved (remote DNS). WARC-IP-Address is left out then: the proxy does not know the origin's address."},
			{name: "socks-proxy-username", metavar: "user", inFile: true, value: stringValue{&c.SOCKSProxyUsername},
				help: "User name for --socks-proxy (RFC 1929 username/password authentication: at most 255 bytes, as is the password)."},
			{name: "socks-proxy-password", metavar: "password", inFile: true, value: stringValue{&c.SOCKSProxyPassword},
				help: "Password for --socks-proxy; never logged or shown. Prefer the config file to the command line, which other users can see."},
			{name: "onion-tor-socks-proxy", metavar: "host:port", inFile: true, value: stringValue{&c.OnionTorSOCKSProxy},
				help: "Reach hosts ending in .onion through this SOCKS5 proxy (Tor's, e.g. 127.0.0.1:9050), whatever else is set; other hosts go as configured otherwise."},
			{name: "upstream-proxy", metavar: "url", inFile: true, value: stringValue{&c.UpstreamProxy},
				help: "Reach every origin through this parent HTTP proxy, http://[user:password@]host:port: plain HTTP is sent to it in absolute form, HTTPS through a CONNECT. Records still hold the origin-form request and no credentials; the response record is what the parent relayed. Not with --socks-proxy."},
		}},
		{"Writers, queue and memory", []*option{
			{name: "writer-workers", aliases: []string{"writer-threads"}, metavar: "int", inFile: true, value: intValue{&c.WriterWorkers},
				help: "Goroutines writing WARC records, each to its own file."},
			{name: "queue-size", metavar: "int", inFile: true, value: intValue{&c.QueueSize},
				help: "Captures waiting for a writer. When it is full, connections with a capture to add wait; nothing is dropped."},
			{name: "queue-max-bytes", metavar: "size", inFile: true, value: sizeValue{&c.QueueMaxBytes},
				help: "Body bytes waiting for a writer, all captures together; past it, connections with a capture to add wait, as for --queue-size. Keeps large bodies from piling up a backlog that takes long to drain. 0: no limit."},
			{name: "queue-full-timeout", metavar: "duration", inFile: true, value: durationValue{&c.QueueFullTimeout},
				help: "Once the queue has been full this long, new requests are answered 503 before anything is fetched."},
			{name: "tmp-file-max-memory", aliases: []string{"tmp-file-max-memory-size"}, metavar: "size", inFile: true, value: sizeValue{&c.TmpFileMaxMemory},
				help: "Bytes of one capture kept in memory; the rest goes to a temporary file."},
			{name: "tmp-dir", metavar: "dir", inFile: true, value: stringValue{&c.TmpDir},
				help: "Directory for temporary files; empty means inside --dir."},
			{name: "spool-memory", metavar: "size", inFile: true, value: sizeValue{&c.SpoolMemory},
				help: "Memory for captures across all connections and the queue; once it is used up, new captures go to temporary files from their first byte."},
		}},
		{"Deduplication, statistics and crawl log", []*option{
			{name: "dedup-db", aliases: []string{"dedup-db-file", "j"}, metavar: "spec", inFile: true, value: stringValue{&c.DedupDB},
				help: "Where dedup entries are kept: embedded:PATH (one local file, the default), redis://host:port/db (shared by a fleet of proxies; ?prefix=name: sets the key prefix), redis+cluster://host:port,host:port, or none. As in warcprox, a bare path means embedded:PATH and /dev/null or empty means none."},
			{name: "stats-db", aliases: []string{"stats-db-file"}, metavar: "spec", inFile: true, value: stringValue{&c.StatsDB},
				help: "Where per-bucket statistics (and the counters that limits check) are kept; the same forms as --dedup-db, and the same file or server may serve both. With none, statistics live in memory only, for limits."},
			{name: "store-timeout", metavar: "duration", inFile: true, value: durationValue{&c.StoreTimeout},
				help: "Longest a dedup lookup or a limits check may wait for its store (Redis, the embedded file) while a client waits: past it a lookup writes the full response, a limits check answers 503. A store that is down never holds a client longer."},
			{name: "dedup-min-text-size", metavar: "size", inFile: true, value: sizeValue{&c.DedupMinTextSize},
				help: "Only dedup text payloads (text/*, JSON, JavaScript, XML, SVG) larger than this."},
			{name: "dedup-min-binary-size", metavar: "size", inFile: true, value: sizeValue{&c.DedupMinBinarySize},
				help: "Only dedup other payloads larger than this."},
			{name: "dedup-only-with-bucket", inFile: true, value: boolValue{&c.DedupOnlyWithBucket},
				help: "Dedup only requests whose Warcprox-Meta names dedup-buckets."},
			{name: "dedup-url-table", inFile: true, value: boolValue{&c.DedupURLTable},
				help: "With a Redis --dedup-db, keep each original's full URL (once per URL), so that a payload seen before at another URL is a revisit; --dedup-url-table=false saves that memory, and such a capture is written in full."},
			{name: "dedup-shard-bits", metavar: "int", inFile: true, value: intValue{&c.DedupShardBits},
				help: "With a Redis --dedup-db, how many leading bits of a digest name its hash (2^N hashes per bucket; 20 suits up to about 100 million entries). An index's layout marker, written by the first proxy that saves, wins over it."},
			{name: "blackout-period", metavar: "duration", inFile: true, value: durationValue{&c.BlackoutPeriod},
				help: "Write nothing for a duplicate of the same URL archived less than this long ago, instead of a revisit record (warcprox's option, a number of seconds or a duration); 0 turns it off."},
			{name: "cdxserver-dedup", metavar: "url", inFile: true, value: stringValue{&c.CDXServerDedup},
				help: "Also dedup against an existing archive through its CDX server (warcprox's option), e.g. https://web.archive.org/cdx/search: a capture whose URL's newest archived capture has the same payload digest becomes a revisit of it. Asked only when --dedup-db finds nothing (--dedup-db none: the CDX server alone, as in warcprox); never written to. Needs --digest-algorithm sha1. A CDX server that fails or is slow only means the capture is written in full."},
			{name: "cdxserver-dedup-cookies", metavar: "string", inFile: true, value: stringValue{&c.CDXServerDedupCookies},
				help: "Cookie header sent with every CDX server request, e.g. \"name1=value1; name2=value2\"."},
			{name: "cdxserver-dedup-max-threads", metavar: "int", inFile: true, value: intValue{&c.CDXServerDedupMaxThreads},
				help: "CDX server requests in flight at once (warcprox's thread count); a lookup waits for a free one within --cdxserver-dedup-timeout."},
			{name: "cdxserver-dedup-timeout", metavar: "duration", inFile: true, value: durationValue{&c.CDXServerDedupTimeout},
				help: "Longest a CDX server lookup may take, waiting for a free request included; past it the capture is written in full."},
			{name: "crawl-log-dir", metavar: "dir", inFile: true, value: stringValue{&c.CrawlLogDir},
				help: "Write a Heritrix-format crawl log into this directory, one file per WARC prefix ({prefix}-{shorthostname}-{port}.log); empty writes none."},
			{name: "cdxj", inFile: true, value: boolValue{&c.CDXJ},
				help: "Write a CDXJ index (the format pywb reads) beside each WARC file once it is closed: NAME.warc.gz gets NAME.cdxj, so the archive replays without reindexing."},
			{name: "subdir-prefix", inFile: true, value: boolValue{&c.SubdirPrefix},
				help: "Write each prefix's WARC files into a subdirectory of --dir named after the prefix."},
		}},
		{"Shipping to object storage", []*option{
			{name: "upload-to", metavar: "s3://bucket/prefix", inFile: true, value: stringValue{&c.UploadTo},
				help: "Ship each closed WARC file (and its CDXJ index with --cdxj; the crawl logs at shutdown, under PREFIX/crawl-logs/) to this S3 bucket and prefix, keyed by its path under --dir, and delete the local copy once the store has confirmed its size and SHA-256. Credentials and region come from the AWS environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_PROFILE). Empty: files stay on disk."},
			{name: "upload-endpoint", metavar: "url", inFile: true, value: stringValue{&c.UploadEndpoint},
				help: "URL of an S3-compatible store (MinIO, Garage, SeaweedFS, VersityGW, Ceph...), addressed path-style, e.g. https://s3.example.org:9000. Empty: AWS S3."},
			{name: "upload-ca-file", metavar: "file", inFile: true, value: stringValue{&c.UploadCAFile},
				help: "PEM file of the CA that signed --upload-endpoint's certificate, for a store on a private CA (its certificate is always verified)."},
			{name: "upload-workers", metavar: "int", inFile: true, value: intValue{&c.UploadWorkers},
				help: "Files shipped at once."},
			{name: "upload-part-size", metavar: "size", inFile: true, value: sizeValue{&c.UploadPartSize},
				help: "Files larger than this go up in parts of this size (multipart upload, 5 MiB to 5 GiB), two at a time, read from the file; smaller ones in one PUT."},
			{name: "upload-keep-local", inFile: true, value: boolValue{&c.UploadKeepLocal},
				help: "Keep the local copy of each file once it is shipped."},
			{name: "upload-webhook", metavar: "url", inFile: true, value: stringValue{&c.UploadWebhook},
				help: "Announce each shipped file once the store has confirmed it, as JSON ({id, kind, filename, key, url, size, sha256, hash, records, first_date, last_date, warc_prefix, completed}): http(s)://... gets a POST, redis://host:port/DB/KEY an RPUSH onto the list KEY. At least once: a receiver drops repeats by id."},
		}},
		{"Logging", []*option{
			{name: "log-level", metavar: "level", inFile: true, value: enumValue{&c.LogLevel, logLevels},
				help: "Least severe level logged: debug, info, warn or error."},
			{name: "log-format", metavar: "format", inFile: true, value: enumValue{&c.LogFormat, logFormats},
				help: "Log line format: text (key=value) or json."},
			{name: "verbose", aliases: []string{"v"}, value: boolValue{&sh.verbose},
				help: "Same as --log-level debug (warcprox)."},
			{name: "quiet", aliases: []string{"q"}, value: boolValue{&sh.quiet},
				help: "Same as --log-level warn (warcprox)."},
			{name: "trace", value: boolValue{&sh.trace},
				help: "Same as --log-level debug (warcprox's trace level). When several of -v, -q and --trace are given, the most verbose wins."},
		}},
		{"General", []*option{
			{name: "config.file", metavar: "file", value: stringValue{&c.ConfigFile},
				help: "YAML file of settings keyed by long flag names (see configs/warcproxy.example.yaml). Flags on the command line override it."},
			{name: "version", value: boolValue{&c.ShowVersion},
				help: "Print the version and exit."},
		}},
	}
}

// flagSet defines every option's names on a FlagSet that reports errors
// to the caller instead of printing them. byName maps each name to its option.
func flagSet(gs []group) (*flag.FlagSet, map[string]*option) {
	fs := flag.NewFlagSet("warcproxy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	byName := make(map[string]*option)
	for _, g := range gs {
		for _, o := range g.options {
			for _, n := range append([]string{o.name}, o.aliases...) {
				fs.Var(o.value, n, o.help)
				byName[n] = o
			}
		}
	}
	return fs, byName
}

// Parse reads the settings from args (without the program name) and the
// config file they name, then validates them. For -h or --help it prints
// Usage to out (without commands: a caller with some passes a nil out and
// prints its own) and returns flag.ErrHelp. With --version it returns at once
// with ShowVersion set, without reading the file or validating. Any other
// error is a usage error naming the flag or key at fault.
func Parse(args []string, out io.Writer) (Config, error) {
	return parse(args, out, os.ReadFile)
}

func parse(args []string, out io.Writer, readFile func(string) ([]byte, error)) (Config, error) {
	c := Default()
	var sh shorthands
	gs := groups(&c, &sh)
	fs, byName := flagSet(gs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if out != nil {
				Usage(out)
			}
			return Config{}, flag.ErrHelp
		}
		return Config{}, explainFlagError(fs, args, err)
	}
	if fs.NArg() > 0 {
		return Config{}, unexpectedArg(args, fs.Args(), byName)
	}
	if c.ShowVersion {
		return c, nil
	}

	// Keys given on the command line, which the file must not override.
	onCommandLine := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { onCommandLine[byName[f.Name].name] = true })
	if onCommandLine["gzip"] || onCommandLine["compression"] {
		// One setting under two names: the file sets neither.
		onCommandLine["gzip"], onCommandLine["compression"] = true, true
	}
	if sh.verbose || sh.quiet || sh.trace {
		if onCommandLine["log-level"] {
			return Config{}, errors.New("--log-level cannot be combined with -v/--verbose, -q/--quiet or --trace; give one of them")
		}
		onCommandLine["log-level"] = true
	}

	if c.ConfigFile != "" {
		data, err := readFile(c.ConfigFile)
		if err != nil {
			return Config{}, fmt.Errorf("--config.file: %w", err)
		}
		// Every value in the file must parse, even one a flag overrides, so
		// a broken file is noticed before it is used without the flag.
		err = applyFile(data, groups(new(Config), new(shorthands)), nil)
		if err == nil {
			err = applyFile(data, gs, onCommandLine)
		}
		if err != nil {
			return Config{}, fmt.Errorf("config file %s: %w", c.ConfigFile, err)
		}
	}

	if err := sh.resolveCompression(&c); err != nil {
		return Config{}, err
	}

	// warcprox's order: --trace, then --verbose, then --quiet.
	switch {
	case sh.trace, sh.verbose:
		c.LogLevel = "debug"
	case sh.quiet:
		c.LogLevel = "warn"
	}

	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Hints for warcprox options that warcproxy does not have: what to use
// instead.
const (
	useRedis    = "use --dedup-db and --stats-db redis://host:port/db (or redis+cluster://...) for stores that several proxies share"
	useCDXJ     = "warcproxy has no playback: write CDXJ indexes with --cdxj and replay the WARCs with pywb or ReplayWeb.page"
	useLogs     = "not supported; captures are in the crawl log (--crawl-log-dir) and the CDXJ indexes (--cdxj), counts in /metrics"
	useLogsMets = "not supported; errors are in the logs (--log-format json for a collector) and /metrics"
)

// warcproxOnly maps the warcprox options warcproxy does not have to a hint
// naming what to use instead. One option per line, so adding
// or removing one is a one-line change. Options starting with "sentry-" are
// refused too (warcproxHint).
var warcproxOnly = map[string]string{
	"rethinkdb-servers":        useRedis,
	"rethinkdb-db":             useRedis,
	"rethinkdb-big-table":      useRedis,
	"rethinkdb-dedup-url":      useRedis,
	"rethinkdb-stats-url":      useRedis,
	"rethinkdb-services-url":   useRedis,
	"rethinkdb-big-table-url":  useRedis,
	"rethinkdb-trough-db-url":  useRedis,
	"kafka-broker-list":        useLogs,
	"kafka-capture-feed-topic": useLogs,
	"plugin":                   "not supported; the crawl log (--crawl-log-dir), CDXJ indexes (--cdxj) and /metrics cover what the usual plugins do",
	"P":                        useCDXJ,
	"playback-port":            useCDXJ,
	"playback-index-db-file":   useCDXJ,
	"logging-conf-file":        "use --log-level and --log-format",
	"profile":                  "use --pprof, which serves Go's profiler on --metrics-address",
	"deploy-environment":       useLogsMets,
	"ssl-context":              "not supported; the TLS settings are --cacert, --certs-dir, --verify-upstream-tls and --unsafe-legacy-renegotiation",
}

// warcproxHint reports whether name (a flag or YAML key, without dashes)
// is a warcprox option warcproxy does not have, and what to use instead.
func warcproxHint(name string) (hint string, ok bool) {
	if hint, ok := warcproxOnly[name]; ok {
		return hint, true
	}
	if strings.HasPrefix(name, "sentry-") {
		return useLogsMets, true
	}
	return "", false
}

// warcproxOnlyMsg is the note added to the error for such an option.
func warcproxOnlyMsg(hint string) string {
	return "a warcprox option that warcproxy does not have: " + hint + "; see docs/configuration.md"
}
