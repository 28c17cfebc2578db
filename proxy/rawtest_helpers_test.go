package proxy_test

import (
	"bufio"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base32"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// rawOrigin is an origin server that answers each request with hand-made
// bytes, so tests can compare the response record with what was on the
// wire byte for byte.
type rawOrigin struct {
	ln        net.Listener
	responses map[string]rawResponse // by request path
	mu        sync.Mutex
	requests  [][]byte // raw request bytes as received, in order
	wg        sync.WaitGroup
}

type rawResponse struct {
	interim string // sent before the body is read (e.g. 100 Continue)
	final   string
	close   bool // close the connection after the response
}

func newRawOrigin(t *testing.T, useTLS bool, responses map[string]rawResponse) *rawOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if useTLS {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{testCert(t)}})
	}
	o := &rawOrigin{ln: ln, responses: responses}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			o.wg.Add(1)
			go func() { defer o.wg.Done(); o.serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); o.wg.Wait() })
	return o
}

func (o *rawOrigin) addr() string { return o.ln.Addr().String() }

func (o *rawOrigin) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var raw []byte
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		raw = append(raw, line...)
		path := strings.Fields(line + " x x")[1]
		length, chunked := 0, false
		for {
			h, err := br.ReadString('\n')
			if err != nil {
				return
			}
			raw = append(raw, h...)
			if h == "\r\n" {
				break
			}
			k, v, _ := strings.Cut(strings.TrimSpace(h), ":")
			switch strings.ToLower(k) {
			case "content-length":
				length, _ = strconv.Atoi(strings.TrimSpace(v))
			case "transfer-encoding":
				chunked = strings.Contains(strings.ToLower(v), "chunked")
			}
		}
		resp, ok := o.responses[path]
		if !ok {
			resp = rawResponse{final: "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"}
		}
		if resp.interim != "" {
			_, _ = io.WriteString(c, resp.interim)
		}
		switch {
		case chunked:
			for {
				size, err := br.ReadString('\n')
				if err != nil {
					return
				}
				raw = append(raw, size...)
				n, _ := strconv.ParseInt(strings.TrimSpace(strings.SplitN(size, ";", 2)[0]), 16, 64)
				if n == 0 {
					end, _ := br.ReadString('\n')
					raw = append(raw, end...)
					break
				}
				data := make([]byte, n+2)
				if _, err := io.ReadFull(br, data); err != nil {
					return
				}
				raw = append(raw, data...)
			}
		case length > 0:
			data := make([]byte, length)
			if _, err := io.ReadFull(br, data); err != nil {
				return
			}
			raw = append(raw, data...)
		}
		o.mu.Lock()
		o.requests = append(o.requests, raw)
		o.mu.Unlock()
		if _, err := io.WriteString(c, resp.final); err != nil {
			return
		}
		if resp.close {
			return
		}
	}
}

// b32sha1 is the default WARC digest of p.
func b32sha1(p []byte) string {
	s := sha1.Sum(p)
	return "sha1:" + base32.StdEncoding.EncodeToString(s[:])
}

// byType returns the records of the given type keyed by target URI; it
// fails if a URI has more than one.
func byType(t *testing.T, recs []warccheck.Record, typ string) map[string]warccheck.Record {
	t.Helper()
	m := make(map[string]warccheck.Record)
	for _, r := range recs {
		if r.Type != typ {
			continue
		}
		if _, dup := m[r.TargetURI]; dup {
			t.Fatalf("two %s records for %s", typ, r.TargetURI)
		}
		m[r.TargetURI] = r
	}
	return m
}

// testCert is a certificate for 127.0.0.1 from httptest's test CA; the
// proxy does not verify origins by default, as an archive records them.
func testCert(t *testing.T) tls.Certificate {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.StartTLS()
	defer srv.Close()
	return srv.TLS.Certificates[0]
}

func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }
