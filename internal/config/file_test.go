package config

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

const exampleFile = "../../configs/warcproxy.example.yaml"

// fileKeys are the keys the config file accepts.
func fileKeys() []string {
	var keys []string
	for _, g := range groups(new(Config), new(shorthands)) {
		for _, o := range g.options {
			if o.inFile {
				keys = append(keys, o.name)
			}
		}
	}
	return keys
}

func TestExampleFileIsTheDefaults(t *testing.T) {
	got, err := Parse([]string{"--config.file", exampleFile}, nil)
	require.NoError(t, err)
	want := Default()
	want.ConfigFile = exampleFile
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%s differs from Default() (-want +got):\n%s", exampleFile, diff)
	}
}

func TestExampleFileHasEveryKey(t *testing.T) {
	data, err := os.ReadFile(exampleFile)
	require.NoError(t, err)
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal(data, &doc))
	var keys []string
	m := doc.Content[0]
	for i := 0; i < len(m.Content); i += 2 {
		keys = append(keys, m.Content[i].Value)
	}
	want := fileKeys()
	slices.Sort(keys)
	slices.Sort(want)
	require.Equal(t, want, keys, "%s must set every key once", exampleFile)
}

func parseFile(t *testing.T, yaml string, args ...string) (Config, error) {
	t.Helper()
	return parse(append([]string{"--config.file", "test.yaml"}, args...), nil, func(string) ([]byte, error) {
		return []byte(yaml), nil
	})
}

func TestFileValues(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want Config
	}{
		{"empty file", "", Default()},
		{"only comments", "# nothing\n", Default()},
		{"empty document", "---\n", Default()},
		{"null keeps the default", "port:\ndir: ~\nmethod-filter:\n", Default()},
		{"duration as seconds", "socket-timeout: 30", with(func(c *Config) { c.SocketTimeout = 30 * time.Second })},
		{"duration as fraction", "socket-timeout: 0.5", with(func(c *Config) { c.SocketTimeout = time.Second / 2 })},
		{"duration in Go syntax", "socket-timeout: 1m30s", with(func(c *Config) { c.SocketTimeout = 90 * time.Second })},
		{"size with unit", "rollover-size: 250 MB", with(func(c *Config) { c.RolloverSize = 250_000_000 })},
		{"size in bytes", "rollover-size: 1000000", with(func(c *Config) { c.RolloverSize = 1_000_000 })},
		{"list in flow style", "method-filter: [GET, POST]", with(func(c *Config) { c.MethodFilter = []string{"GET", "POST"} })},
		{"list in block style", "method-filter:\n  - GET\n  - HEAD\n", with(func(c *Config) { c.MethodFilter = []string{"GET", "HEAD"} })},
		{"list of one as a scalar", "method-filter: GET", with(func(c *Config) { c.MethodFilter = []string{"GET"} })},
		{"empty list", "method-filter: []", Default()},
		{"booleans", "gzip: false\nbase32: false\nverify-upstream-tls: true",
			with(func(c *Config) { c.Compression, c.Base32, c.VerifyUpstreamTLS = "none", false, true })},
		{"compression", "compression: zstd\nzstd-level: 7\n", with(func(c *Config) { c.Compression, c.ZstdLevel = "zstd", 7 })},
		{"gzip: true with compression: zstd", "gzip: true\ncompression: zstd\n", with(func(c *Config) { c.Compression = "zstd" })},
		{"quoted dash prefix", `prefix: "-"`, with(func(c *Config) { c.Prefix = "-" })},
		{"warc-version unquoted", "warc-version: 1.1", with(func(c *Config) { c.WARCVersion = "1.1" })},
		{"warc-version quoted", `warc-version: "1.1"`, with(func(c *Config) { c.WARCVersion = "1.1" })},
		{"empty string", `certs-dir: ""`, Default()},
		{"anchor and alias", "idle-timeout: &t 45s\nheader-timeout: *t\n",
			with(func(c *Config) { c.IdleTimeout, c.HeaderTimeout = 45*time.Second, 45*time.Second })},
		{"case-insensitive choices", "log-level: WARN\ndigest-algorithm: SHA256\n",
			with(func(c *Config) { c.LogLevel, c.DigestAlgorithm = "warn", "sha256" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFile(t, tt.yaml)
			require.NoError(t, err)
			tt.want.ConfigFile = "test.yaml"
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFileErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // the error after "config file test.yaml: "
	}{
		{"unknown key", "port: 1\nfoo: bar\n", `line 2: unknown key "foo"`},
		{"snake case", "max_conns: 5", `line 1: unknown key "max_conns" (did you mean "max-conns"?)`},
		{"upper case", "Port: 5", `line 1: unknown key "Port" (did you mean "port"?)`},
		{"flag alias", "\nmax-threads: 5", `line 2: unknown key "max-threads" (did you mean "max-conns"?)`},
		{"warcprox name", "size: 5", `line 1: unknown key "size" (did you mean "rollover-size"?)`},
		{"typo", "rollover-sise: 5", `line 1: unknown key "rollover-sise" (did you mean "rollover-size"?)`},
		{"abbreviation", "rollover-idle: 60", `line 1: unknown key "rollover-idle" (did you mean "rollover-idle-time"?)`},
		{"abbreviation of an alias", "max-thread: 10", `line 1: unknown key "max-thread" (did you mean "max-conns"?)`},
		{"ambiguous abbreviation", "socks: x", `line 1: unknown key "socks" (did you mean one of "socks-proxy", "socks-proxy-username", "socks-proxy-password"?)`},
		{"command-line only", "verbose: true", `line 1: unknown key "verbose"`},
		{"config.file is not a key", "config.file: other.yaml", `line 1: unknown key "config.file"`},
		{"every unknown key", "a: 1\nport: 2\nb: 3\n", `line 1: unknown key "a"; line 3: unknown key "b"`},
		{"bad integer", "\n\nport: http", `line 3: port: invalid value "http": not an integer`},
		{"hex integer", "port: 0x1f40", `line 1: port: invalid value "0x1f40": not an integer`},
		{"bad duration", "idle-timeout: soon", `line 1: idle-timeout: invalid value "soon": not a duration`},
		{"bad size", "spool-memory: 64m", `line 1: spool-memory: invalid value "64m": ambiguous unit "m": write 64MiB`},
		{"bad boolean", "gzip: no", `line 1: gzip: invalid value "no": want true or false`},
		{"bad choice", "log-format: xml", `line 1: log-format: invalid value "xml": want one of text, json`},
		{"list for a single value", "port: [1, 2]", "line 1: port: want a single value"},
		{"mapping for a list", "method-filter: {GET: 1}", "line 1: method-filter: want a value or a list"},
		{"nested list", "method-filter: [GET, [POST]]", "line 1: method-filter: line 1: want a list of single values"},
		{"not a mapping", "- port\n", "line 1: want a mapping of keys to values, found !!seq"},
		{"scalar document", "port", "line 1: want a mapping of keys to values, found !!str"},
		{"two documents", "port: 1\n---\nport: 2\n", "holds more than one YAML document"},
		{"duplicate key", "port: 1\nport: 2\n", `mapping key "port" already defined`},
		{"syntax error", "port: [1\n", "yaml: line"},
		{"bare dash", "prefix: -\n", `quote a lone -, as in prefix: "-"`},
		{"out of range after parsing", "port: 70000", "--port: must be between 0 and 65535"},
		{"gzip: false with compression: zstd", "gzip: false\ncompression: zstd\n", "--gzip=false asks for no compression and --compression zstd"},
		{"gzip-level with compression: zstd", "compression: zstd\ngzip-level: 6\n", "--gzip-level: is for --compression gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFile(t, tt.yaml)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}
