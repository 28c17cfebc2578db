// Package cdxserver serves a web archive's index as a CDX server, for tests
// of CDX dedup against real index data.
//
// Index runs warcio.js's own indexer (`warcio cdx-index`, the CDXJ that
// pywb reads) over WARC files; New serves those lines on 127.0.0.1 with the
// part of the CDX API that warcprox's --cdxserver-dedup uses, with the
// semantics of the Internet Archive's wayback CDX server (warcprox's
// default endpoint):
//
//   - url: exact match on the capture's URL (matchType=exact, the default;
//     other match types are answered 400). No SURT canonicalisation: the
//     URL must be the one captured.
//   - limit: N > 0 keeps the first N lines, N < 0 the last -N (the newest).
//   - filter (repeatable): [!][=|~]FIELD:EXPR, contains / exact / regex
//     match from the start, ! negates.
//   - fl: the fields to print, comma separated.
//   - output: text (the default: fields space separated) or json (pywb's
//     NDJSON, one object a line).
//
// Field names are pywb's (urlkey, timestamp, url, mime, status, digest,
// length, offset, filename) with the wayback names as aliases (original,
// mimetype, statuscode). Without fl, text output is the 7 public fields of
// the wayback server.
package cdxserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Capture is one index line: the fields warcio.js writes, as strings.
type Capture map[string]string

// aliases maps the wayback server's field names (and pywb's short ones) to
// pywb's.
var aliases = map[string]string{
	"original": "url", "mimetype": "mime", "statuscode": "status",
	"u": "url", "m": "mime", "s": "status", "d": "digest", "t": "timestamp", "k": "urlkey",
}

func field(name string) string {
	if a, ok := aliases[name]; ok {
		return a
	}
	return name
}

// publicFields is the wayback server's default text line.
var publicFields = []string{"urlkey", "timestamp", "url", "mime", "status", "digest", "length"}

// Index runs `warcio cdx-index` (CDXJ) over paths and returns its lines,
// parsed, in the order warcio.js printed them. It skips the test when node
// or warcio.js is missing, unless CI=true.
func Index(tb testing.TB, paths ...string) []Capture {
	tb.Helper()
	dir := warcioDir(tb)
	node, err := exec.LookPath("node")
	cli := filepath.Join(dir, "node_modules", "warcio", "dist", "cli.js")
	if err == nil {
		_, err = os.Stat(cli)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("cdxserver: warcio.js not runnable: %v", err)
		}
		tb.Skipf("cdxserver: warcio.js not runnable (run `npm ci --prefix internal/testutil/warcio`): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{cli, "cdx-index"}, paths...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		tb.Fatalf("cdxserver: warcio cdx-index: %v\nstderr:\n%s", err, stderr.String())
	}
	var out []Capture
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		parts := strings.SplitN(line, " ", 3)
		if len(parts) != 3 {
			tb.Fatalf("cdxserver: not a CDXJ line: %q", line)
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(parts[2]), &doc); err != nil {
			tb.Fatalf("cdxserver: CDXJ line %q: %v", line, err)
		}
		c := Capture{"urlkey": parts[0], "timestamp": parts[1]}
		for k, v := range doc {
			c[k] = fmt.Sprint(v)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("cdxserver: reading warcio output: %v", err)
	}
	return out
}

// warcioDir is internal/testutil/warcio, beside this package.
func warcioDir(tb testing.TB) string {
	tb.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatalf("cdxserver: cannot locate the source directory")
	}
	return filepath.Join(filepath.Dir(file), "..", "warcio")
}

// Server is a running CDX server.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	captures []Capture
	queries  []url.Values
}

// New serves captures on 127.0.0.1 until the test ends. They are sorted by
// urlkey then timestamp, as a CDX index is.
func New(tb testing.TB, captures []Capture) *Server {
	tb.Helper()
	cs := append([]Capture(nil), captures...)
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i]["urlkey"] != cs[j]["urlkey"] {
			return cs[i]["urlkey"] < cs[j]["urlkey"]
		}
		return cs[i]["timestamp"] < cs[j]["timestamp"]
	})
	s := &Server{captures: cs}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.Close)
	return s
}

// Queries returns the query parameters of every request so far.
func (s *Server) Queries() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]url.Values(nil), s.queries...)
}

// Answer is what the server answers to q (status and body), without
// recording the query; handy in benchmarks and custom handlers.
func (s *Server) Answer(q url.Values) (int, string) {
	if q.Get("url") == "" {
		return http.StatusBadRequest, "url is required\n"
	}
	if mt := q.Get("matchType"); mt != "" && mt != "exact" {
		return http.StatusBadRequest, "only matchType=exact is served\n"
	}
	var filters []func(Capture) bool
	for _, f := range q["filter"] {
		fn, err := parseFilter(f)
		if err != nil {
			return http.StatusBadRequest, err.Error() + "\n"
		}
		filters = append(filters, fn)
	}
	var match []Capture
next:
	for _, c := range s.captures {
		if c["url"] != q.Get("url") {
			continue
		}
		for _, f := range filters {
			if !f(c) {
				continue next
			}
		}
		match = append(match, c)
	}
	if l := q.Get("limit"); l != "" {
		var n int
		if _, err := fmt.Sscan(l, &n); err != nil {
			return http.StatusBadRequest, "bad limit\n"
		}
		switch {
		case n > 0 && n < len(match):
			match = match[:n]
		case n < 0 && -n < len(match):
			match = match[len(match)+n:]
		}
	}
	fields := publicFields
	if fl := q.Get("fl"); fl != "" {
		fields = nil
		for _, f := range strings.Split(fl, ",") {
			fields = append(fields, field(f))
		}
	}
	var b strings.Builder
	for _, c := range match {
		switch q.Get("output") {
		case "", "text":
			vals := make([]string, len(fields))
			for i, f := range fields {
				vals[i] = c[f]
				if vals[i] == "" {
					vals[i] = "-"
				}
			}
			b.WriteString(strings.Join(vals, " ") + "\n")
		case "json":
			doc := map[string]string{}
			for _, f := range fields {
				if v, ok := c[f]; ok {
					doc[f] = v
				}
			}
			j, _ := json.Marshal(doc)
			b.Write(j)
			b.WriteByte('\n')
		default:
			return http.StatusBadRequest, "output must be text or json\n"
		}
	}
	return http.StatusOK, b.String()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	s.queries = append(s.queries, q)
	s.mu.Unlock()
	status, body := s.Answer(q)
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// parseFilter reads [!][=|~]FIELD:EXPR.
func parseFilter(f string) (func(Capture) bool, error) {
	neg := strings.HasPrefix(f, "!")
	f = strings.TrimPrefix(f, "!")
	mode := byte(0)
	if f != "" && (f[0] == '=' || f[0] == '~') {
		mode, f = f[0], f[1:]
	}
	name, expr, ok := strings.Cut(f, ":")
	if !ok {
		return nil, fmt.Errorf("filter %q: want [!][=|~]field:expression", f)
	}
	name = field(name)
	var match func(string) bool
	switch mode {
	case '=':
		match = func(v string) bool { return v == expr }
	case '~':
		re, err := regexp.Compile("^(?:" + expr + ")")
		if err != nil {
			return nil, fmt.Errorf("filter %q: %w", f, err)
		}
		match = re.MatchString
	default:
		match = func(v string) bool { return strings.Contains(v, expr) }
	}
	return func(c Capture) bool { return match(c[name]) != neg }, nil
}
