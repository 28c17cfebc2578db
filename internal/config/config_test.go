package config

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// with returns Default() changed by f.
func with(f func(c *Config)) Config {
	c := Default()
	f(&c)
	return c
}

func TestDefaultIsValid(t *testing.T) {
	require.NoError(t, Default().Validate())
}

func TestParseNoArgsGivesDefaults(t *testing.T) {
	for _, args := range [][]string{nil, {}} {
		got, err := Parse(args, nil)
		require.NoError(t, err)
		if diff := cmp.Diff(Default(), got); diff != "" {
			t.Fatalf("Parse(%q) (-want +got):\n%s", args, diff)
		}
	}
}

func TestDefaultValues(t *testing.T) {
	// The documented defaults, spelled out so a change to one is deliberate.
	want := Config{
		Address: "127.0.0.1", Port: 8000, Dir: "./warcs", Prefix: "WARCPROX",
		WARCFilename: "{prefix}-{timestamp17}-{serialno}-{randomtoken}",
		Compression:  "gzip", GzipLevel: 0, ZstdLevel: 3, ZstdDictionary: "", WARCVersion: "1.0", WARCProtocol: true, DigestAlgorithm: "sha1", Base32: true,
		CACert: "./warcproxy-ca.pem", CertsDir: "",
		MaxConns: 1000, ConnWaitTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		HeaderTimeout: 30 * time.Second, MaxHeaderBytes: 4 * 1024 * 1024, HTTP2: true, HTTP2MaxStreams: 100,
		WriterWorkers: 2, QueueSize: 1000, QueueMaxBytes: 256 << 20, QueueFullTimeout: 10 * time.Second,
		RolloverSize: 1000000000, RolloverIdleTime: 0, MaxOpenWARCs: 256,
		TmpFileMaxMemory: 512 * 1024, TmpDir: "", SpoolMemory: 32 * 1024 * 1024, MaxResourceSize: 0,
		WebSocketMessages: true, WebSocketRecordSize: 100_000_000, WebSocketRecordTime: 10 * time.Minute,
		SocketTimeout: 60 * time.Second, FetchTimeout: 20 * time.Minute, MethodFilter: nil, VerifyUpstreamTLS: false,
		ShutdownTimeout: 30 * time.Second,
		DedupDB:         "embedded:./warcproxy.db", StatsDB: "embedded:./warcproxy.db", StoreTimeout: 500 * time.Millisecond,
		DedupURLTable: true, DedupShardBits: 20,
		CDXServerDedupMaxThreads: 50, CDXServerDedupTimeout: 2 * time.Second,
		UploadWorkers: 2, UploadPartSize: 100 << 20,
		LogLevel: "info", LogFormat: "text",
	}
	if diff := cmp.Diff(want, Default()); diff != "" {
		t.Fatalf("Default() (-want +got):\n%s", diff)
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want Config
	}{
		{"address", []string{"--address", "0.0.0.0"}, with(func(c *Config) { c.Address = "0.0.0.0" })},
		{"address alias -b", []string{"-b", "::1"}, with(func(c *Config) { c.Address = "::1" })},
		{"empty address", []string{"--address="}, with(func(c *Config) { c.Address = "" })},
		{"port", []string{"--port=9000"}, with(func(c *Config) { c.Port = 9000 })},
		{"port alias -p", []string{"-p", "0"}, with(func(c *Config) { c.Port = 0 })},
		{"dir alias -d", []string{"-d", "/tmp/w"}, with(func(c *Config) { c.Dir = "/tmp/w" })},
		{"prefix alias -n", []string{"-n", "crawl1"}, with(func(c *Config) { c.Prefix = "crawl1" })},
		{"prefix - means no archiving", []string{"--prefix", "-"}, with(func(c *Config) { c.Prefix = "-" })},
		{"warc-filename", []string{"--warc-filename", "{prefix}-{timestamp14}-{hostname}-{port}-{{x}}"},
			with(func(c *Config) { c.WARCFilename = "{prefix}-{timestamp14}-{hostname}-{port}-{{x}}" })},
		{"gzip alias -z", []string{"-z"}, Default()},
		{"gzip off", []string{"--gzip=false"}, with(func(c *Config) { c.Compression = "none" })},
		{"gzip off single dash", []string{"-z=false"}, with(func(c *Config) { c.Compression = "none" })},
		{"gzip-level", []string{"--gzip-level", "9"}, with(func(c *Config) { c.GzipLevel = 9 })},
		{"compression zstd", []string{"--compression", "zstd"}, with(func(c *Config) { c.Compression = "zstd" })},
		{"compression any case", []string{"--compression", "ZSTD"}, with(func(c *Config) { c.Compression = "zstd" })},
		{"compression none", []string{"--compression=none"}, with(func(c *Config) { c.Compression = "none" })},
		{"-z with zstd", []string{"-z", "--compression", "zstd"}, with(func(c *Config) { c.Compression = "zstd" })},
		{"--gzip=false with none", []string{"--gzip=false", "--compression", "none"}, with(func(c *Config) { c.Compression = "none" })},
		{"zstd level and dictionary", []string{"--compression", "zstd", "--zstd-level", "19", "--zstd-dictionary", "/etc/d"},
			with(func(c *Config) { c.Compression, c.ZstdLevel, c.ZstdDictionary = "zstd", 19, "/etc/d" })},
		{"warc-version", []string{"--warc-version", "1.1"}, with(func(c *Config) { c.WARCVersion = "1.1" })},
		{"digest alias -g", []string{"-g", "sha256"}, with(func(c *Config) { c.DigestAlgorithm = "sha256" })},
		{"digest in capitals", []string{"-g", "SHA1"}, Default()},
		{"base32 off", []string{"--base32=false"}, with(func(c *Config) { c.Base32 = false })},
		{"cacert alias -c", []string{"-c", "/etc/ca.pem"}, with(func(c *Config) { c.CACert = "/etc/ca.pem" })},
		{"certs-dir", []string{"--certs-dir", "certs"}, with(func(c *Config) { c.CertsDir = "certs" })},
		{"max-conns", []string{"--max-conns", "5"}, with(func(c *Config) { c.MaxConns = 5 })},
		{"max-conns alias --max-threads", []string{"--max-threads", "200"}, with(func(c *Config) { c.MaxConns = 200 })},
		{"conn-wait-timeout", []string{"--conn-wait-timeout", "1.5"}, with(func(c *Config) { c.ConnWaitTimeout = 1500 * time.Millisecond })},
		{"idle-timeout", []string{"--idle-timeout", "5m"}, with(func(c *Config) { c.IdleTimeout = 5 * time.Minute })},
		{"header-timeout", []string{"--header-timeout", "10"}, with(func(c *Config) { c.HeaderTimeout = 10 * time.Second })},
		{"max-header-bytes", []string{"--max-header-bytes", "64KiB"}, with(func(c *Config) { c.MaxHeaderBytes = 65536 })},
		{"http2 off", []string{"--http2=false", "--http2-max-streams", "8"}, with(func(c *Config) { c.HTTP2 = false; c.HTTP2MaxStreams = 8 })},
		{"writer-workers", []string{"--writer-workers", "8"}, with(func(c *Config) { c.WriterWorkers = 8 })},
		{"writer-workers alias --writer-threads", []string{"--writer-threads", "4"}, with(func(c *Config) { c.WriterWorkers = 4 })},
		{"queue-size", []string{"--queue-size", "500"}, with(func(c *Config) { c.QueueSize = 500 })},
		{"queue-full-timeout", []string{"--queue-full-timeout", "1m"}, with(func(c *Config) { c.QueueFullTimeout = time.Minute })},
		{"rollover-size", []string{"--rollover-size", "100MB"}, with(func(c *Config) { c.RolloverSize = 100_000_000 })},
		{"rollover-size alias -s", []string{"-s", "2000"}, with(func(c *Config) { c.RolloverSize = 2000 })},
		{"rollover-size alias --size", []string{"--size", "1GiB"}, with(func(c *Config) { c.RolloverSize = 1 << 30 })},
		{"rollover-idle-time", []string{"--rollover-idle-time", "300"}, with(func(c *Config) { c.RolloverIdleTime = 5 * time.Minute })},
		{"tmp-file-max-memory", []string{"--tmp-file-max-memory", "1MiB"}, with(func(c *Config) { c.TmpFileMaxMemory = 1 << 20 })},
		{"tmp-file-max-memory warcprox name", []string{"--tmp-file-max-memory-size", "1048576"}, with(func(c *Config) { c.TmpFileMaxMemory = 1 << 20 })},
		{"tmp-file-max-memory 0", []string{"--tmp-file-max-memory", "0"}, with(func(c *Config) { c.TmpFileMaxMemory = 0 })},
		{"tmp-dir", []string{"--tmp-dir", "/var/tmp"}, with(func(c *Config) { c.TmpDir = "/var/tmp" })},
		{"spool-memory", []string{"--spool-memory", "1GiB"}, with(func(c *Config) { c.SpoolMemory = 1 << 30 })},
		{"max-resource-size", []string{"--max-resource-size", "10MB"}, with(func(c *Config) { c.MaxResourceSize = 10_000_000 })},
		{"websocket-messages off", []string{"--websocket-messages=false"}, with(func(c *Config) { c.WebSocketMessages = false })},
		{"websocket-record-size", []string{"--websocket-record-size", "1MB"}, with(func(c *Config) { c.WebSocketRecordSize = 1_000_000 })},
		{"websocket-record-time", []string{"--websocket-record-time", "90s"}, with(func(c *Config) { c.WebSocketRecordTime = 90 * time.Second })},
		{"socket-timeout", []string{"--socket-timeout", "0.5"}, with(func(c *Config) { c.SocketTimeout = 500 * time.Millisecond })},
		{"method-filter once", []string{"--method-filter", "GET"}, with(func(c *Config) { c.MethodFilter = []string{"GET"} })},
		{"method-filter in lower case", []string{"--method-filter", "get", "--method-filter", "Post"},
			with(func(c *Config) { c.MethodFilter = []string{"GET", "POST"} })},
		{"method-filter repeated", []string{"--method-filter", "GET", "-method-filter=POST"},
			with(func(c *Config) { c.MethodFilter = []string{"GET", "POST"} })},
		{"verify-upstream-tls", []string{"--verify-upstream-tls"}, with(func(c *Config) { c.VerifyUpstreamTLS = true })},
		{"shutdown-timeout", []string{"--shutdown-timeout", "2m30s"}, with(func(c *Config) { c.ShutdownTimeout = 150 * time.Second })},
		{"log-level", []string{"--log-level", "warn"}, with(func(c *Config) { c.LogLevel = "warn" })},
		{"log-level any case", []string{"--log-level", "DEBUG"}, with(func(c *Config) { c.LogLevel = "debug" })},
		{"log-format", []string{"--log-format", "json"}, with(func(c *Config) { c.LogFormat = "json" })},
		{"verbose", []string{"--verbose"}, with(func(c *Config) { c.LogLevel = "debug" })},
		{"verbose alias -v", []string{"-v"}, with(func(c *Config) { c.LogLevel = "debug" })},
		{"quiet", []string{"--quiet"}, with(func(c *Config) { c.LogLevel = "warn" })},
		{"quiet alias -q", []string{"-q"}, with(func(c *Config) { c.LogLevel = "warn" })},
		{"trace", []string{"--trace"}, with(func(c *Config) { c.LogLevel = "debug" })},
		{"verbose beats quiet whatever the order", []string{"-v", "-q"}, with(func(c *Config) { c.LogLevel = "debug" })},
		{"quiet then verbose", []string{"-q", "-v"}, with(func(c *Config) { c.LogLevel = "debug" })},
		{"verbose=false changes nothing", []string{"--verbose=false"}, Default()},
		{"later flag wins", []string{"-p", "1", "--port", "2"}, with(func(c *Config) { c.Port = 2 })},
		{"end of flags marker", []string{"-p", "1", "--"}, with(func(c *Config) { c.Port = 1 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.args, nil)
			require.NoError(t, err)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("Parse(%q) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// Command lines written for warcprox must give the same settings here.
func TestParseWarcproxCommandLines(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Config
	}{
		{
			name: "crawl",
			line: "--port 8000 --dir /tmp/w -z --prefix crawl1 --rollover-idle-time 300 --max-threads 200 " +
				"--writer-threads 4 --socket-timeout 60 --size 1000000000 --base32 --digest-algorithm sha1 " +
				"--method-filter GET --method-filter POST",
			want: with(func(c *Config) {
				c.Port = 8000
				c.Dir = "/tmp/w"
				c.Prefix = "crawl1"
				c.RolloverIdleTime = 300 * time.Second
				c.MaxConns = 200
				c.WriterWorkers = 4
				c.SocketTimeout = 60 * time.Second
				c.RolloverSize = 1000000000
				c.MethodFilter = []string{"GET", "POST"}
			}),
		},
		{
			name: "short flags",
			line: "-p 8001 -b 0.0.0.0 -d warcs -z -n WEB -s 500000000 -g sha1 -c ./ca.pem -v",
			want: with(func(c *Config) {
				c.Port = 8001
				c.Address = "0.0.0.0"
				c.Dir = "warcs"
				c.Prefix = "WEB"
				c.RolloverSize = 500000000
				c.CACert = "./ca.pem"
				c.LogLevel = "debug"
			}),
		},
		{
			name: "equals signs and warcprox names",
			line: "--port=8000 --address=localhost --dir=./warcs --gzip --rollover-idle-time=180 " +
				"--cacert=/etc/warcprox/ca.pem --certs-dir=/etc/warcprox/certs --queue-size=500 " +
				"--tmp-file-max-memory-size=1048576 --max-resource-size=1000000 --quiet",
			want: with(func(c *Config) {
				c.Address = "localhost"
				c.RolloverIdleTime = 180 * time.Second
				c.CACert = "/etc/warcprox/ca.pem"
				c.CertsDir = "/etc/warcprox/certs"
				c.QueueSize = 500
				c.TmpFileMaxMemory = 1 << 20
				c.MaxResourceSize = 1000000
				c.LogLevel = "warn"
			}),
		},
		{
			name: "fractional socket timeout and no archiving",
			line: "--socket-timeout 30.5 --prefix - --trace --warc-filename {prefix}-{timestamp14}-{shorthostname}-{serialno}",
			want: with(func(c *Config) {
				c.SocketTimeout = 30500 * time.Millisecond
				c.Prefix = "-"
				c.LogLevel = "debug"
				c.WARCFilename = "{prefix}-{timestamp14}-{shorthostname}-{serialno}"
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.Fields(tt.line), nil)
			require.NoError(t, err)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("Parse(%q) (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

func TestParseErrorsNameTheFlag(t *testing.T) {
	tests := []struct {
		args []string
		want []string // substrings of the error
	}{
		{[]string{"--no-such-flag"}, []string{"no-such-flag"}},
		{[]string{"--dedup-db", "mysql://x"}, []string{"--dedup-db", "unknown backend"}},
		{[]string{"--stats-db", "embedded:"}, []string{"--stats-db", "embedded needs a file"}},
		{[]string{"--dedup-db", "redis://127.0.0.1:6379/x"}, []string{"--dedup-db", "redis"}},
		{[]string{"--dedup-min-text-size", "-1"}, []string{"dedup-min-text-size", "negative"}},
		{[]string{"--blackout-period", "-5"}, []string{"blackout-period", "negative"}},
		{[]string{"--rethinkdb-dedup-url", "x"}, []string{"rethinkdb-dedup-url", "warcprox option"}},
		{[]string{"--cdxserver-dedup", "web.archive.org/cdx/search"}, []string{"--cdxserver-dedup", "http://"}},
		{[]string{"--cdxserver-dedup", "ftp://h/cdx"}, []string{"--cdxserver-dedup", "http://"}},
		{[]string{"--cdxserver-dedup", "http://h/cdx", "-g", "sha256"}, []string{"--cdxserver-dedup", "--digest-algorithm sha1"}},
		{[]string{"--cdxserver-dedup-max-threads", "0"}, []string{"--cdxserver-dedup-max-threads", "at least 1"}},
		{[]string{"--cdxserver-dedup-timeout", "0"}, []string{"--cdxserver-dedup-timeout", "more than 0"}},
		{[]string{"--cdxserver-dedup-cookies", "a=b\nX-Evil: 1"}, []string{"--cdxserver-dedup-cookies", "line breaks"}},
		{[]string{"--port"}, []string{"port", "argument"}},
		{[]string{"--port", "http"}, []string{"port", `"http"`, "not an integer"}},
		{[]string{"-p", "99999999999999999999"}, []string{"-p", "out of range"}},
		{[]string{"--port", "70000"}, []string{"--port", "65535"}},
		{[]string{"--port", "-1"}, []string{"--port", "65535"}},
		{[]string{"--address", "127.0.0.1:8000"}, []string{"--address", "--port"}},
		{[]string{"--address", "[::1]"}, []string{"--address", "without brackets"}},
		{[]string{"--dir", ""}, []string{"--dir"}},
		{[]string{"--prefix", ""}, []string{"--prefix"}},
		{[]string{"--prefix", "a/b"}, []string{"--prefix", "/"}},
		{[]string{"--prefix", `a\b`}, []string{"--prefix"}},
		{[]string{"--prefix", ".hidden"}, []string{"--prefix", "dot"}},
		{[]string{"--prefix", "a\tb"}, []string{"--prefix", "control"}},
		{[]string{"--prefix", strings.Repeat("p", 201)}, []string{"--prefix", "200 bytes"}},
		{[]string{"--warc-filename", "{prefix}-{date}"}, []string{"--warc-filename", "{date}"}},
		{[]string{"--warc-filename", "{prefix"}, []string{"--warc-filename", "unclosed"}},
		{[]string{"--warc-filename", "a}b"}, []string{"--warc-filename", "single }"}},
		{[]string{"--warc-filename", ""}, []string{"--warc-filename", "empty"}},
		{[]string{"--warc-filename", "sub/{serialno}"}, []string{"--warc-filename", "/"}},
		{[]string{"--gzip", "false"}, []string{`"false"`, "--gzip=false"}},
		{[]string{"-z", "0"}, []string{`"0"`, "-z=0"}},
		{[]string{"--gzip=maybe"}, []string{"gzip", "boolean"}},
		{[]string{"--gzip-level", "10"}, []string{"--gzip-level"}},
		{[]string{"--gzip-level", "-1"}, []string{"--gzip-level"}},
		{[]string{"--compression", "lz4"}, []string{"compression", "gzip, zstd, none"}},
		{[]string{"--gzip=false", "--compression", "zstd"}, []string{"--gzip=false", "--compression zstd", "give --compression alone"}},
		{[]string{"--compression", "zstd", "-z=false"}, []string{"--gzip=false", "--compression zstd"}},
		{[]string{"-z", "--compression", "none"}, []string{"--gzip (-z)", "--compression none"}},
		{[]string{"--compression", "zstd", "--gzip-level", "9"}, []string{"--gzip-level", "is for --compression gzip", "compression is zstd", "--zstd-level"}},
		{[]string{"--gzip=false", "--gzip-level", "9"}, []string{"--gzip-level", "compression is none"}},
		{[]string{"--zstd-level", "19"}, []string{"--zstd-level", "is for --compression zstd", "compression is gzip"}},
		{[]string{"--compression", "zstd", "--zstd-level", "23"}, []string{"--zstd-level", "1 and 22"}},
		{[]string{"--compression", "zstd", "--zstd-level", "0"}, []string{"--zstd-level", "1 and 22"}},
		{[]string{"--zstd-dictionary", "d"}, []string{"--zstd-dictionary", "is for --compression zstd"}},
		{[]string{"--warc-version", "1.2"}, []string{"warc-version", "1.0, 1.1"}},
		{[]string{"-g", "md5"}, []string{"-g", "sha1, sha256"}},
		{[]string{"--cacert", ""}, []string{"--cacert"}},
		{[]string{"--max-conns", "0"}, []string{"--max-conns", "at least 1"}},
		{[]string{"--max-threads", "-5"}, []string{"--max-conns"}},
		{[]string{"--writer-workers", "0"}, []string{"--writer-workers"}},
		{[]string{"--queue-size", "0"}, []string{"--queue-size"}},
		{[]string{"--conn-wait-timeout", "0"}, []string{"--conn-wait-timeout", "more than 0"}},
		{[]string{"--idle-timeout", "0s"}, []string{"--idle-timeout"}},
		{[]string{"--header-timeout", "0"}, []string{"--header-timeout"}},
		{[]string{"--queue-full-timeout", "0"}, []string{"--queue-full-timeout"}},
		{[]string{"--socket-timeout", "0"}, []string{"--socket-timeout"}},
		{[]string{"--shutdown-timeout", "0"}, []string{"--shutdown-timeout"}},
		{[]string{"--socket-timeout", "-1"}, []string{"socket-timeout", "negative"}},
		{[]string{"--socket-timeout", "soon"}, []string{"socket-timeout", "not a duration"}},
		{[]string{"--rollover-idle-time", "-5m"}, []string{"rollover-idle-time", "negative"}},
		{[]string{"--max-header-bytes", "0"}, []string{"--max-header-bytes"}},
		{[]string{"--rollover-size", "0"}, []string{"--rollover-size"}},
		{[]string{"-s", "-1"}, []string{"-s", "negative"}},
		{[]string{"--size", "10k"}, []string{"size", "ambiguous", "10KiB", "10KB"}},
		{[]string{"--max-resource-size", "5 parsecs"}, []string{"max-resource-size", "unknown unit"}},
		{[]string{"--spool-memory", "1.5"}, []string{"spool-memory", "whole number"}},
		{[]string{"--method-filter", "GET,POST"}, []string{"--method-filter", "GET,POST"}},
		{[]string{"--method-filter", ""}, []string{"--method-filter"}},
		{[]string{"--log-level", "loud"}, []string{"log-level", "debug, info, warn, error"}},
		{[]string{"--log-format", "xml"}, []string{"log-format", "text, json"}},
		{[]string{"--log-level", "info", "-v"}, []string{"--log-level", "--verbose"}},
		{[]string{"8000"}, []string{`unexpected argument "8000"`}},
		{[]string{"-p", "8000", "--", "-z"}, []string{`unexpected argument "-z"`}},
		{[]string{"--config.file", "/does/not/exist.yaml"}, []string{"--config.file", "/does/not/exist.yaml"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := Parse(tt.args, nil)
			require.Error(t, err)
			require.NotErrorIs(t, err, flag.ErrHelp)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestUndefinedFlagAsTyped: an unknown or misused flag is echoed as the
// user typed it, one dash or two, and an unknown one never with its value
// (which may be a secret).
func TestUndefinedFlagAsTyped(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag"}, "unknown flag --no-such-flag"},
		{[]string{"-no-such-flag"}, "unknown flag -no-such-flag"},
		{[]string{"--no-such-flag=s3cret"}, "unknown flag --no-such-flag"},
		{[]string{"-p", "8000", "--rethinkdb-dedup-url", "s3cret"}, "unknown flag --rethinkdb-dedup-url (a warcprox option"},
		{[]string{"-rethinkdb-dedup-url=s3cret"}, "unknown flag -rethinkdb-dedup-url (a warcprox option"},
		{[]string{"--dir", "d", "--port"}, "flag needs an argument: --port"},
		{[]string{"--port=80x"}, `invalid value "80x" for flag --port: `},
		{[]string{"-port=80x"}, `invalid value "80x" for flag -port: `},
		{[]string{"--gzip=maybe"}, `invalid boolean value "maybe" for --gzip: `},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := Parse(tt.args, nil)
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), tt.want), "%v", err)
			require.NotContains(t, err.Error(), "s3cret")
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := Default()
	c.Port = -1
	c.WriterWorkers = 0
	c.LogFormat = "xml"
	err := c.Validate()
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 3, "one line per problem: %v", err)
	require.Contains(t, lines[0], "--port")
	require.Contains(t, lines[1], "--writer-workers")
	require.Contains(t, lines[2], "--log-format")
}

func TestValidateBuiltInCode(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		flag string // "" for valid
	}{
		{"port 0", with(func(c *Config) { c.Port = 0 }), ""},
		{"port 65535", with(func(c *Config) { c.Port = 65535 }), ""},
		{"ipv6 address", with(func(c *Config) { c.Address = "::1" }), ""},
		{"unknown digest", with(func(c *Config) { c.DigestAlgorithm = "SHA1" }), "--digest-algorithm"},
		{"unknown warc version", with(func(c *Config) { c.WARCVersion = "WARC/1.0" }), "--warc-version"},
		{"negative spool memory", with(func(c *Config) { c.SpoolMemory = -1 }), "--spool-memory"},
		{"negative tmp-file-max-memory", with(func(c *Config) { c.TmpFileMaxMemory = -1 }), "--tmp-file-max-memory"},
		{"negative max-resource-size", with(func(c *Config) { c.MaxResourceSize = -1 }), "--max-resource-size"},
		{"websocket-record-size too small", with(func(c *Config) { c.WebSocketRecordSize = 100 }), "--websocket-record-size"},
		{"websocket-record-time 0", with(func(c *Config) { c.WebSocketRecordTime = 0 }), "--websocket-record-time"},
		{"websocket-record-time negative", with(func(c *Config) { c.WebSocketRecordTime = -time.Second }), "--websocket-record-time"},
		{"negative rollover idle", with(func(c *Config) { c.RolloverIdleTime = -time.Second }), "--rollover-idle-time"},
		{"prefix with NUL", with(func(c *Config) { c.Prefix = "a\x00" }), "--prefix"},
		{"method with space", with(func(c *Config) { c.MethodFilter = []string{"GET "} }), "--method-filter"},
		{"extension methods are fine", with(func(c *Config) { c.MethodFilter = []string{"PROPFIND", "M-SEARCH"} }), ""},
		{"placeholder with format spec", with(func(c *Config) { c.WARCFilename = "{serialno:05d}" }), "--warc-filename"},
		{"every placeholder", with(func(c *Config) {
			c.WARCFilename = "{prefix}{timestamp14}{timestamp17}{serialno}{randomtoken}{hostname}{shorthostname}{port}"
		}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			if tt.flag == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.flag)
		})
	}
}

func TestParseHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help", "-help"} {
		t.Run(arg, func(t *testing.T) {
			var out bytes.Buffer
			_, err := Parse([]string{"-p", "1", arg}, &out)
			require.ErrorIs(t, err, flag.ErrHelp)
			var want bytes.Buffer
			Usage(&want)
			require.Equal(t, want.String(), out.String())
		})
	}
}

func TestParseVersionSkipsFileAndValidation(t *testing.T) {
	got, err := Parse([]string{"--config.file", "/does/not/exist", "--port", "70000", "--version"}, nil)
	require.NoError(t, err)
	require.True(t, got.ShowVersion)
}

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "warcproxy.yaml")
	require.NoError(t, os.WriteFile(p, []byte(yaml), 0o600))
	return p
}

func TestPrecedence(t *testing.T) {
	file := writeConfig(t, `
port: 9000
dir: /from/file
max-conns: 500
method-filter: [GET, POST]
socket-timeout: 30
rollover-size: 2GB
log-level: error
gzip: false
`)
	fromFile := with(func(c *Config) {
		c.Port = 9000
		c.Dir = "/from/file"
		c.MaxConns = 500
		c.MethodFilter = []string{"GET", "POST"}
		c.SocketTimeout = 30 * time.Second
		c.RolloverSize = 2_000_000_000
		c.LogLevel = "error"
		c.Compression = "none"
		c.ConfigFile = file
	})
	tests := []struct {
		name string
		args []string
		want Config
	}{
		{"file over defaults", []string{"--config.file", file}, fromFile},
		{"equals form", []string{"--config.file=" + file}, fromFile},
		{"single dash", []string{"-config.file", file}, fromFile},
		{"flag after the file", []string{"--config.file", file, "--port", "9100"},
			with(func(c *Config) { *c = fromFile; c.Port = 9100 })},
		{"flag before the file", []string{"-p", "9100", "--config.file", file},
			with(func(c *Config) { *c = fromFile; c.Port = 9100 })},
		{"alias beats the file's key", []string{"--max-threads", "7", "--config.file", file},
			with(func(c *Config) { *c = fromFile; c.MaxConns = 7 })},
		{"a flag set to the default still wins", []string{"--config.file", file, "--dir", "./warcs"},
			with(func(c *Config) { *c = fromFile; c.Dir = "./warcs" })},
		{"repeated flag replaces the file's list", []string{"--config.file", file, "--method-filter", "PUT"},
			with(func(c *Config) { *c = fromFile; c.MethodFilter = []string{"PUT"} })},
		{"boolean flag", []string{"--config.file", file, "-z"},
			with(func(c *Config) { *c = fromFile; c.Compression = "gzip" })},
		{"--compression beats the file's gzip: false", []string{"--config.file", file, "--compression", "zstd"},
			with(func(c *Config) { *c = fromFile; c.Compression = "zstd" })},
		{"-v beats the file's log-level", []string{"--config.file", file, "-v"},
			with(func(c *Config) { *c = fromFile; c.LogLevel = "debug" })},
		{"-q beats the file's log-level", []string{"-q", "--config.file", file},
			with(func(c *Config) { *c = fromFile; c.LogLevel = "warn" })},
		{"--log-level beats the file's", []string{"--config.file", file, "--log-level", "info"},
			with(func(c *Config) { *c = fromFile; c.LogLevel = "info" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.args, nil)
			require.NoError(t, err)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("Parse(%q) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestFileValueValidatedAfterFlags(t *testing.T) {
	// An out-of-range value in the file is fine when a flag replaces it.
	file := writeConfig(t, "writer-workers: 0\n")
	_, err := Parse([]string{"--config.file", file}, nil)
	require.ErrorContains(t, err, "--writer-workers")
	got, err := Parse([]string{"--config.file", file, "--writer-threads", "3"}, nil)
	require.NoError(t, err)
	require.Equal(t, 3, got.WriterWorkers)

	// A value that does not parse is an error even when a flag overrides it.
	file = writeConfig(t, "port: http\n")
	_, err = Parse([]string{"--config.file", file, "--port", "1"}, nil)
	require.ErrorContains(t, err, "line 1: port")
}

// warcprox command lines name their database files with --dedup-db-file
// (-j) and --stats-db-file, or turn them off with /dev/null; they run
// unchanged, as aliases of --dedup-db and --stats-db.
func TestWarcproxDatabaseFlags(t *testing.T) {
	for _, tt := range []struct {
		args           []string
		dedup, statsDB string
	}{
		{[]string{"--dedup-db-file=/dev/null", "--stats-db-file", "/dev/null"}, "/dev/null", "/dev/null"},
		{[]string{"-j", "/dev/null"}, "/dev/null", DefaultDB},
		{[]string{"--dedup-db-file", ""}, "", DefaultDB},
		{[]string{"-j", "./warcprox.sqlite", "--stats-db-file", "stats.db"}, "./warcprox.sqlite", "stats.db"},
		{[]string{"--dedup-db", "redis://127.0.0.1:6379/0", "--stats-db", "none"}, "redis://127.0.0.1:6379/0", "none"},
	} {
		c, err := Parse(tt.args, io.Discard)
		require.NoError(t, err, "%q", tt.args)
		require.Equal(t, tt.dedup, c.DedupDB, "%q", tt.args)
		require.Equal(t, tt.statsDB, c.StatsDB, "%q", tt.args)
	}
}

// warcprox's --cdxserver-dedup options run unchanged; hex digests are
// fine (the CDX client converts them), other algorithms are refused.
func TestWarcproxCDXServerDedupFlags(t *testing.T) {
	c, err := Parse([]string{"--cdxserver-dedup", "https://web.archive.org/cdx/search",
		"--cdxserver-dedup-cookies", "a=1; b=2", "--cdxserver-dedup-max-threads", "8",
		"--cdxserver-dedup-timeout", "0.5", "--base32=false"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "https://web.archive.org/cdx/search", c.CDXServerDedup)
	require.Equal(t, "a=1; b=2", c.CDXServerDedupCookies)
	require.Equal(t, 8, c.CDXServerDedupMaxThreads)
	require.Equal(t, 500*time.Millisecond, c.CDXServerDedupTimeout)
	require.False(t, c.Base32)
}

// warcprox options warcproxy does not have are refused, on the command line
// (with the value after a space or "=") and in the file alike, with what
// to use instead.
func TestWarcproxOnlyOptionsNameTheReplacement(t *testing.T) {
	for _, tt := range []struct {
		name  string
		value string // "" for a warcprox boolean
		want  string // in the error, after the option's name
	}{
		{"rethinkdb-dedup-url", "rethinkdb://db0/warcprox/dedup", "--dedup-db and --stats-db redis://"},
		{"rethinkdb-stats-url", "rethinkdb://db0/warcprox/stats", "--dedup-db and --stats-db redis://"},
		{"rethinkdb-services-url", "rethinkdb://db0/warcprox/services", "--dedup-db and --stats-db redis://"},
		{"rethinkdb-big-table-url", "rethinkdb://db0/warcprox/captures", "--dedup-db and --stats-db redis://"},
		{"rethinkdb-trough-db-url", "rethinkdb://db0/trough", "--dedup-db and --stats-db redis://"},
		{"rethinkdb-servers", "db0:28015", "--dedup-db and --stats-db redis://"},
		{"kafka-broker-list", "k0:9092", "--crawl-log-dir"},
		{"plugin", "myplugin.Plugin", "not supported; the crawl log (--crawl-log-dir), CDXJ indexes (--cdxj) and /metrics"},
		{"playback-port", "8001", "--cdxj and replay the WARCs with pywb or ReplayWeb.page"},
		{"P", "8001", "--cdxj and replay the WARCs with pywb or ReplayWeb.page"},
		{"playback-index-db-file", "playback.db", "--cdxj and replay the WARCs with pywb or ReplayWeb.page"},
		{"logging-conf-file", "logging.yaml", "use --log-level and --log-format"},
		{"profile", "", "use --pprof"},
		{"sentry-dsn", "https://key@sentry.example/1", "errors are in the logs"},
		{"sentry-environment", "prod", "errors are in the logs"},
		{"deploy-environment", "prod", "errors are in the logs"},
		{"ssl-context", "x", "not supported; the TLS settings are"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			forms := [][]string{{"--" + tt.name}}
			if tt.value != "" {
				forms = [][]string{{"--" + tt.name, tt.value}, {"--" + tt.name + "=" + tt.value}, {"-" + tt.name, tt.value}}
			}
			for _, args := range forms {
				_, err := Parse(args, io.Discard)
				typed, _, _ := strings.Cut(args[0], "=") // as the user typed it, without a value
				require.ErrorContains(t, err, "unknown flag "+typed+" (a warcprox option that warcproxy does not have: ", "%q", args)
				require.ErrorContains(t, err, tt.want, "%q", args)
			}
			value := tt.value
			if value == "" {
				value = "true"
			}
			_, err := Parse([]string{"--config.file", writeConfig(t, "port: 1\n"+tt.name+": "+value+"\n")}, io.Discard)
			require.ErrorContains(t, err, `line 2: unknown key "`+tt.name+`" (a warcprox option that warcproxy does not have: `, "in the file")
			require.ErrorContains(t, err, tt.want, "in the file")
		})
	}
}

// warcprox's --unsafe-legacy-renegotiation is accepted as a flag and as a
// key of the file.
func TestUnsafeLegacyRenegotiation(t *testing.T) {
	c, err := Parse(nil, io.Discard)
	require.NoError(t, err)
	require.False(t, c.UnsafeLegacyRenegotiation, "off by default")
	c, err = Parse([]string{"--unsafe-legacy-renegotiation"}, io.Discard)
	require.NoError(t, err)
	require.True(t, c.UnsafeLegacyRenegotiation)
	c, err = Parse([]string{"--config.file", writeConfig(t, "unsafe-legacy-renegotiation: true\n")}, io.Discard)
	require.NoError(t, err)
	require.True(t, c.UnsafeLegacyRenegotiation)
}

// warcprox's --no-warc-open-suffix is accepted as a flag and as a key of
// the file.
func TestNoWARCOpenSuffix(t *testing.T) {
	c, err := Parse(nil, io.Discard)
	require.NoError(t, err)
	require.False(t, c.NoWARCOpenSuffix, "off by default")
	c, err = Parse([]string{"--no-warc-open-suffix"}, io.Discard)
	require.NoError(t, err)
	require.True(t, c.NoWARCOpenSuffix)
	c, err = Parse([]string{"--config.file", writeConfig(t, "no-warc-open-suffix: true\n")}, io.Discard)
	require.NoError(t, err)
	require.True(t, c.NoWARCOpenSuffix)
}
