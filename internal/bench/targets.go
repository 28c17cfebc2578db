package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/nlnwa/gowarc/v3"
)

// ParseTarget parses an absolute http or https URL.
func ParseTarget(s string) (Target, error) {
	u, err := url.Parse(s)
	if err != nil {
		return Target{}, fmt.Errorf("bad URL %q: %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Target{}, fmt.Errorf("bad URL %q: want http:// or https:// and a host", s)
	}
	return Target{URL: u}, nil
}

// ReadURLFile reads one URL a line; blank lines and lines starting with #
// are skipped.
func ReadURLFile(path string) ([]Target, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading url file: %w", err)
	}
	defer f.Close()
	var out []Target
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		t, err := ParseTarget(s)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading url file %s: %w", path, err)
	}
	return out, nil
}

// hopByHop are the headers a replayed request leaves out (RFC 9110 7.6.1,
// plus Host, which comes from the target, and the body framing, which
// net/http sets).
var hopByHop = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Host", "Content-Length", "Warcprox-Meta",
}

// maxReplayBody is the largest request body a replayed request keeps.
const maxReplayBody = 1 << 20

// ParseReplayTarget reads --replay-target: HOST:PORT (the original scheme
// is kept) or http://HOST:PORT / https://HOST:PORT (that scheme is used).
func ParseReplayTarget(s string) (*url.URL, error) {
	if s == "" {
		return nil, nil
	}
	if !strings.Contains(s, "://") {
		return &url.URL{Host: s}, nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("bad replay target %q: want HOST:PORT or http(s)://HOST:PORT", s)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// ReadReplay reads the request records of WARC files (.warc or .warc.gz)
// and turns each into a Target: its method, URL (WARC-Target-URI), headers
// without hop-by-hop ones, and a body up to 1 MiB sent with
// Content-Length. With target not nil every URL's host and port become
// target's (and its scheme, if set); the path and query are kept.
func ReadReplay(paths []string, target *url.URL) ([]Target, error) {
	var out []Target
	for _, p := range paths {
		ts, err := readReplayFile(p, target)
		if err != nil {
			return nil, err
		}
		out = append(out, ts...)
	}
	return out, nil
}

func readReplayFile(path string, target *url.URL) ([]Target, error) {
	r, err := openWARC(path)
	if err != nil {
		return nil, fmt.Errorf("opening warc %s: %w", path, err)
	}
	defer r.Close()
	var out []Target
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading warc %s at %d: %w", path, rec.Offset, err)
		}
		t, ok, err := requestTarget(rec.WarcRecord, target)
		_ = rec.Close()
		if err != nil {
			return nil, fmt.Errorf("%s at %d: %w", path, rec.Offset, err)
		}
		if ok {
			out = append(out, t)
		}
	}
}

// requestTarget turns a request record into a Target; ok is false for
// other records.
func requestTarget(rec gowarc.WarcRecord, target *url.URL) (t Target, ok bool, err error) {
	if rec == nil || rec.Type() != gowarc.Request {
		return Target{}, false, nil
	}
	raw, err := rec.Block().RawBytes()
	if err != nil {
		return Target{}, false, fmt.Errorf("reading request block: %w", err)
	}
	block, err := io.ReadAll(io.LimitReader(raw, maxReplayBody+64<<10))
	if err != nil {
		return Target{}, false, fmt.Errorf("reading request block: %w", err)
	}
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(block)))
	if err != nil {
		return Target{}, false, fmt.Errorf("parsing request block: %w", err)
	}
	u, err := url.Parse(rec.WarcHeader().Get(gowarc.WarcTargetURI))
	if err != nil || u.Host == "" {
		return Target{}, false, fmt.Errorf("bad WARC-Target-URI %q", rec.WarcHeader().Get(gowarc.WarcTargetURI))
	}
	if target != nil {
		u.Host = target.Host
		if target.Scheme != "" {
			u.Scheme = target.Scheme
		}
	}
	h := req.Header.Clone()
	for _, k := range hopByHop {
		h.Del(k)
	}
	t = Target{Method: req.Method, URL: u, Header: h}
	if req.ContentLength > 0 && req.ContentLength <= maxReplayBody {
		t.Body, err = io.ReadAll(req.Body)
		if err != nil {
			return Target{}, false, fmt.Errorf("reading request body: %w", err)
		}
	}
	return t, true, nil
}
