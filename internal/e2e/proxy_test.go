package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// echoOrigin answers every request with a body naming method, path and
// request body, plus a few special paths.
func echoOrigin() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("ETag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		fmt.Fprintf(w, "%s %s body=%q te=%v", r.Method, r.URL.RequestURI(), body, r.TransferEncoding)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	})
	return mux
}

func TestMethodsAndStatuses(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		name := "http"
		if useTLS {
			name = "https"
		}
		t.Run(name, func(t *testing.T) {
			origin := httptest.NewUnstartedServer(echoOrigin())
			if useTLS {
				origin.StartTLS()
			} else {
				origin.Start()
			}
			defer origin.Close()
			p := proxytest.Start(t, nil)
			client := p.Client()

			type tc struct {
				method, path string
				body         io.Reader
				header       map[string]string
				wantStatus   int
				wantBody     string
			}
			pipeR, pipeW := io.Pipe()
			go func() {
				_, _ = pipeW.Write([]byte("chunked "))
				_, _ = pipeW.Write([]byte("upload"))
				pipeW.Close()
			}()
			cases := []tc{
				{"GET", "/get?q=1&x=%20y", nil, nil, 200, `GET /get?q=1&x=%20y body="" te=[]`},
				{"HEAD", "/head", nil, nil, 200, ""},
				{"POST", "/post-length", strings.NewReader("form=data"), nil, 200, `POST /post-length body="form=data" te=[]`},
				{"POST", "/post-chunked", pipeR, nil, 200, `POST /post-chunked body="chunked upload" te=[chunked]`},
				{"PUT", "/put", strings.NewReader("put-body"), nil, 200, `PUT /put body="put-body" te=[]`},
				{"OPTIONS", "/options", nil, nil, 200, `OPTIONS /options body="" te=[]`},
				{"DELETE", "/delete", nil, nil, 200, `DELETE /delete body="" te=[]`},
				{"GET", "/not-modified", nil, map[string]string{"If-None-Match": `"v1"`}, 304, ""},
				{"GET", "/redirect", nil, nil, 302, ""},
			}
			for _, c := range cases {
				req, err := http.NewRequest(c.method, origin.URL+c.path, c.body)
				require.NoError(t, err)
				if c.path == "/post-chunked" {
					req.ContentLength = -1
				}
				for k, v := range c.header {
					req.Header.Set(k, v)
				}
				resp, err := client.Do(req)
				require.NoError(t, err, c.path)
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.NoError(t, err, c.path)
				require.Equal(t, c.wantStatus, resp.StatusCode, c.path)
				if c.wantBody != "" {
					require.Equal(t, c.wantBody, string(body), c.path)
				}
				if c.path == "/redirect" {
					require.Equal(t, "/elsewhere", resp.Header.Get("Location"), "3xx passed through, not followed")
				}
				if c.method == "HEAD" {
					require.Empty(t, body)
					require.NotEmpty(t, resp.Header.Get("Content-Length"), "HEAD keeps the origin's Content-Length")
				}
			}
			p.Stop()

			recs := warccheck.Dir(t, p.Dir)
			res := byType(t, recs, "response")
			reqs := byType(t, recs, "request")
			require.Len(t, res, len(cases))
			require.Len(t, reqs, len(cases))
			for _, c := range cases {
				uri := origin.URL + c.path
				require.Contains(t, res, uri)
				require.True(t, bytes.HasPrefix(res[uri].Block, fmt.Appendf(nil, "HTTP/1.1 %d ", c.wantStatus)), "%s: %q", uri, res[uri].Block)
				require.True(t, bytes.HasPrefix(reqs[uri].Block, []byte(c.method+" "+c.path+" HTTP/1.1\r\n")), "%s: %q", uri, reqs[uri].Block)
			}
			require.Contains(t, string(reqs[origin.URL+"/post-length"].Block), "\r\n\r\nform=data")
			require.Contains(t, string(reqs[origin.URL+"/post-chunked"].Block), "Transfer-Encoding: chunked")
			require.Contains(t, string(reqs[origin.URL+"/post-chunked"].Block), "upload")
		})
	}
}

// TestKeepAlive checks that client connections are reused (warcprox forces
// Connection: close; we don't), plain and inside a MITM tunnel.
func TestKeepAlive(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		origin := httptest.NewUnstartedServer(echoOrigin())
		if useTLS {
			origin.StartTLS()
		} else {
			origin.Start()
		}
		p := proxytest.Start(t, nil)
		client := p.Client()
		reused := 0
		for i := range 10 {
			trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
				if info.Reused {
					reused++
				}
			}}
			req, _ := http.NewRequest("GET", fmt.Sprintf("%s/ka/%d", origin.URL, i), nil)
			req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
			resp, err := client.Do(req)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Equal(t, 200, resp.StatusCode)
		}
		require.Equal(t, 9, reused, "tls=%v: every request after the first reuses the client connection", useTLS)
		p.Stop()
		recs := warccheck.Dir(t, p.Dir)
		require.Len(t, byType(t, recs, "response"), 10)
		origin.Close()
	}
}

func TestStatusEndpoint(t *testing.T) {
	p := proxytest.Start(t, nil)
	for _, get := range []func() (*http.Response, error){
		func() (*http.Response, error) { return http.Get(p.URL.String() + "/status") }, // origin-form
		func() (*http.Response, error) { return p.Client().Get(p.URL.String() + "/status") },
	} {
		resp, err := get()
		require.NoError(t, err)
		var st map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
		resp.Body.Close()
		for _, k := range []string{"version", "address", "port", "pid", "active_requests", "queued_urls",
			"queue_max_size", "urls_processed", "warc_bytes_written", "start_time"} {
			require.Contains(t, st, k)
		}
		require.Equal(t, float64(p.App.Addr().Port), st["port"])
		require.Equal(t, float64(os.Getpid()), st["pid"])
		require.Equal(t, float64(1000), st["queue_max_size"])
	}
}

// TestLocalEndpointsOnTheProxyPort: the proxy port's own pages say where
// /status and /metrics are: listed at / and served there by default;
// with --metrics-address, neither listed nor served, and their 404 names
// the flag and the address they are served on.
func TestLocalEndpointsOnTheProxyPort(t *testing.T) {
	get := func(t *testing.T, url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name    string
		metrics bool
	}{{"on the proxy port", false}, {"with --metrics-address", true}} {
		t.Run(tc.name, func(t *testing.T) {
			p := proxytest.Start(t, func(c *config.Config) {
				if tc.metrics {
					c.MetricsAddress = "127.0.0.1:0"
				}
			})
			code, body := get(t, p.URL.String()+"/")
			require.Equal(t, 404, code)
			require.Contains(t, body, "this is a recording proxy")
			if !tc.metrics {
				require.Contains(t, body, "Local endpoints: /status, /metrics")
				for _, path := range []string{"/status", "/metrics"} {
					code, body := get(t, p.URL.String()+path)
					require.Equal(t, 200, code, "%s: %s", path, body)
				}
				return
			}
			where := "--metrics-address " + p.App.MetricsAddr().String()
			require.NotContains(t, body, "Local endpoints")
			require.Contains(t, body, "/status and /metrics are served on "+where)
			for _, path := range []string{"/status", "/metrics"} {
				code, body := get(t, p.URL.String()+path)
				require.Equal(t, 404, code)
				require.Contains(t, body, path+" is served on "+where+", not on the proxy port")
				code, body = get(t, "http://"+p.App.MetricsAddr().String()+path)
				require.Equal(t, 200, code, "%s on %s: %s", path, where, body)
			}
		})
	}
}

// TestUpstreamFailures: refused, timeout and TLS failures give the client a
// clear 502/504 with a reason, and the proxy keeps serving.
func TestUpstreamFailures(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := closed.Addr().String()
	closed.Close()

	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	require.NoError(t, err)
	defer silent.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	plain := httptest.NewServer(echoOrigin())
	defer plain.Close()

	p := proxytest.Start(t, func(c *config.Config) { c.SocketTimeout = 500 * time.Millisecond })
	client := p.Client()
	cases := []struct {
		url    string
		status int
		reason string
	}{
		{"http://" + closedAddr + "/", 502, "connection refused"},
		{"http://" + silent.Addr().String() + "/", 504, "timeout"},
		{"https://" + strings.TrimPrefix(plain.URL, "http://") + "/", 502, "TLS handshake failed"},
	}
	for _, c := range cases {
		resp, err := client.Get(c.url)
		require.NoError(t, err, c.url)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, c.status, resp.StatusCode, "%s: %s", c.url, body)
		require.Contains(t, string(body), c.reason)
	}
	// CONNECT to a closed port fails at CONNECT time with a 502.
	_, err = dialConnect(t.Context(), p.URL.Host, closedAddr)
	require.ErrorContains(t, err, "502")

	resp, err := client.Get(plain.URL + "/still-serving")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	p.Stop()
	recs := warccheck.Dir(t, p.Dir)
	require.Len(t, byType(t, recs, "response"), 1, "failed fetches write no records")
}

// streamOrigin sends size random bytes in chunks; the test reads them.
func streamOrigin(size int64) (*httptest.Server, []byte) {
	block := make([]byte, 1<<20)
	_, _ = rand.Read(block)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		if r.URL.Query().Get("length") != "" {
			w.Header().Set("Content-Length", fmt.Sprint(size))
		}
		for left := size; left > 0; {
			n := min(left, int64(len(block)))
			if _, err := w.Write(block[:n]); err != nil {
				return
			}
			left -= n
		}
	}))
	return srv, block
}

// TestLargeBodyFlatMemory streams 200 MB through the proxy; the heap stays
// far below the body size (a leak check, not a timing). The body is
// compressible, so its record is compressed on several cores, whose 1 MiB
// blocks come from pools: about 35 MiB of heap at the peak, whatever the
// size, but twice that under the race detector, which drops pooled items
// on purpose.
func TestLargeBodyFlatMemory(t *testing.T) {
	const size = 200 << 20
	origin, _ := streamOrigin(size)
	defer origin.Close()
	// Dedup off: both bodies are the same, and both must be written whole.
	p := proxytest.Start(t, func(c *config.Config) { c.DedupDB = "none" })

	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	for _, q := range []string{"?length=1", ""} {
		resp, err := p.Client().Get(origin.URL + "/big" + q)
		require.NoError(t, err)
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, int64(size), n)
	}
	p.Stop()
	close(stop)
	wg.Wait()
	t.Logf("peak heap in use: %.1f MiB", float64(peak.Load())/(1<<20))
	require.Less(t, peak.Load(), uint64(size/2), "heap must not grow with the body size")

	recs := warccheck.Dir(t, p.Dir)
	res := byType(t, recs, "response")
	require.Len(t, res, 2)
	for _, r := range res {
		require.Greater(t, r.BlockLen, int64(size))
	}
}

// TestMaxResourceSize: a body over --max-resource-size is cut, the record
// says WARC-Truncated: length, and the client sees an incomplete response.
func TestMaxResourceSize(t *testing.T) {
	origin, block := streamOrigin(4 << 20)
	defer origin.Close()
	const limit = 100 << 10
	p := proxytest.Start(t, func(c *config.Config) { c.MaxResourceSize = limit })
	for _, q := range []string{"?length=1", "?chunked"} {
		resp, err := p.Client().Get(origin.URL + "/big" + q)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Error(t, err, "the client must not see a clean end")
		require.LessOrEqual(t, len(body), limit, "%s: the client gets no byte past the limit", q)
		require.Equal(t, block[:len(body)], body)
	}
	p.Stop()
	recs := warccheck.Dir(t, p.Dir)
	res := byType(t, recs, "response")
	require.Len(t, res, 2)
	for uri, r := range res {
		require.Equal(t, "length", r.Header["WARC-Truncated"], uri)
		require.Less(t, r.BlockLen, int64(limit+4096), uri)
		require.Greater(t, r.BlockLen, int64(limit), uri)
	}
}

// TestClientDisconnectMidBody: the client hangs up after part of the body;
// the proxy stops fetching and records what it read, marked
// WARC-Truncated: disconnect.
func TestClientDisconnectMidBody(t *testing.T) {
	sent := make(chan struct{})
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(10<<20))
		_, _ = w.Write(bytes.Repeat([]byte("a"), 256<<10))
		w.(http.Flusher).Flush()
		close(sent)
		<-r.Context().Done() // hold the rest until the proxy gives up
	}))
	defer origin.Close()
	p := proxytest.Start(t, nil)
	resp, err := p.Client().Get(origin.URL + "/slow")
	require.NoError(t, err)
	buf := make([]byte, 64<<10)
	_, err = io.ReadFull(resp.Body, buf)
	require.NoError(t, err)
	<-sent
	resp.Body.Close() // hang up mid-body
	p.Stop()
	recs := warccheck.Dir(t, p.Dir)
	res := byType(t, recs, "response")
	require.Len(t, res, 1)
	r := res[origin.URL+"/slow"]
	require.Equal(t, "disconnect", r.Header["WARC-Truncated"])
	require.GreaterOrEqual(t, r.BlockLen, int64(64<<10))
	require.Less(t, r.BlockLen, int64(10<<20))
}

// TestMaxConnsWaitThen503: connections over --max-conns wait for a slot;
// one that gets a slot in time is served, one that doesn't gets a 503.
func TestMaxConnsWaitThen503(t *testing.T) {
	origin := httptest.NewServer(echoOrigin())
	defer origin.Close()
	p := proxytest.Start(t, func(c *config.Config) {
		c.MaxConns = 2
		c.ConnWaitTimeout = 700 * time.Millisecond
	})
	// Two idle connections hold both slots.
	var holders []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", p.URL.Host)
		require.NoError(t, err)
		holders = append(holders, c)
	}
	time.Sleep(100 * time.Millisecond)
	get := func() (int, string) {
		c, err := net.Dial("tcp", p.URL.Host)
		require.NoError(t, err)
		defer c.Close()
		fmt.Fprintf(c, "GET %s/x HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", origin.URL, strings.TrimPrefix(origin.URL, "http://"))
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufioReader(c), nil)
		require.NoError(t, err, "an over-limit connection gets an answer, never a hang")
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	status, body := get()
	require.Equal(t, 503, status)
	require.Contains(t, body, "--max-conns")

	// Free a slot while a third connection waits: it is served.
	go func() { time.Sleep(200 * time.Millisecond); holders[0].Close() }()
	status, _ = get()
	require.Equal(t, 200, status)
	holders[1].Close()
}

// TestConcurrentClients: 200 clients x 20 requests with 1, 2 and 4 writer
// workers: exactly one response and one request record per exchange.
func TestConcurrentClients(t *testing.T) {
	clients, perClient := 200, 20
	if testing.Short() {
		clients, perClient = 50, 10
	}
	origin := httptest.NewServer(echoOrigin())
	defer origin.Close()
	tlsOrigin := httptest.NewTLSServer(echoOrigin())
	defer tlsOrigin.Close()
	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			p := proxytest.Start(t, func(c *config.Config) {
				c.WriterWorkers = workers
				c.QueueSize = 100
				// Under -race one worker can keep the queue full for
				// longer than the default 10 s; this test is about records,
				// not about refusing early.
				c.QueueFullTimeout = 10 * time.Minute
			})
			client := p.Client()
			client.Transport.(*http.Transport).MaxIdleConnsPerHost = clients
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					base := origin.URL
					if c%4 == 0 {
						base = tlsOrigin.URL
					}
					for i := range perClient {
						resp, err := client.Get(fmt.Sprintf("%s/c%d/r%d", base, c, i))
						if err != nil {
							errs <- err
							return
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 200 {
							errs <- fmt.Errorf("c%d/r%d: %s", c, i, resp.Status)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			p.Stop()
			recs := warccheck.Dir(t, p.Dir)
			res := byType(t, recs, "response")
			reqs := byType(t, recs, "request")
			require.Len(t, res, clients*perClient)
			require.Len(t, reqs, clients*perClient)
			for uri, r := range res {
				require.Equal(t, r.ID, reqs[uri].Header["WARC-Concurrent-To"], uri)
				require.Equal(t, r.File, reqs[uri].File, "records of one capture share a file")
			}
		})
	}
}

// TestUpgradeDoesNotHang: a WebSocket-style upgrade is passed through as a
// byte tunnel; the handshake is recorded. As on other responses, an
// origin's Strict-Transport-Security or Warcprox-Meta on its 101 stays in
// the record only.
func TestUpgradeDoesNotHang(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n" +
			"Strict-Transport-Security: max-age=31536000\r\n" +
			"Warcprox-Meta: {\"reached-limit\":{\"job1/total/urls\":1}}\r\n\r\n")
		_ = brw.Flush()
		line := make([]byte, 5)
		if _, err := io.ReadFull(brw, line); err == nil {
			_, _ = c.Write(bytes.ToUpper(line))
		}
	}))
	defer origin.Close()
	p := proxytest.Start(t, nil)
	c, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	host := strings.TrimPrefix(origin.URL, "http://")
	fmt.Fprintf(c, "GET %s/ws HTTP/1.1\r\nHost: %s\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n", origin.URL, host)
	br := bufioReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, 101, resp.StatusCode)
	require.Equal(t, "echo", resp.Header.Get("Upgrade"))
	require.Empty(t, resp.Header.Values("Strict-Transport-Security"))
	require.Empty(t, resp.Header.Values("Warcprox-Meta"))
	_, err = c.Write([]byte("hello"))
	require.NoError(t, err)
	got := make([]byte, 5)
	_, err = io.ReadFull(br, got)
	require.NoError(t, err)
	require.Equal(t, "HELLO", string(got))
	c.Close()
	p.Stop()
	recs := warccheck.Dir(t, p.Dir)
	res := byType(t, recs, "response")
	rec := string(res[origin.URL+"/ws"].Block)
	require.Contains(t, rec, "101 Switching Protocols")
	require.Contains(t, rec, "Strict-Transport-Security: max-age=31536000\r\n")
	require.Contains(t, rec, "Warcprox-Meta: {\"reached-limit\"")
}

// TestHeaderLimits: request headers over --max-header-bytes get a 431, on
// plain connections and inside MITM tunnels.
func TestHeaderLimits(t *testing.T) {
	origin := httptest.NewTLSServer(echoOrigin())
	defer origin.Close()
	p := proxytest.Start(t, func(c *config.Config) { c.MaxHeaderBytes = 16 << 10 })
	big := strings.Repeat("x", 64<<10)
	req, _ := http.NewRequest("GET", origin.URL+"/big-header", nil)
	req.Header.Set("X-Big", big)
	resp, err := p.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 431, resp.StatusCode, "inside a MITM tunnel")

	plain := httptest.NewServer(echoOrigin())
	defer plain.Close()
	req, _ = http.NewRequest("GET", plain.URL+"/big-header", nil)
	req.Header.Set("X-Big", big)
	resp, err = p.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 431, resp.StatusCode, "plain proxy request")
}

// TestCurl drives the proxy with the real curl, as the README tells users.
func TestCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl not installed")
		}
		t.Skip("curl not installed")
	}
	origin := httptest.NewTLSServer(echoOrigin())
	defer origin.Close()
	p := proxytest.Start(t, nil)
	out, err := exec.Command(curl, "-sS", "--fail", "-x", p.URL.String(), "--cacert", p.App.CACertFile(),
		origin.URL+"/curl?x=1").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, `GET /curl?x=1 body="" te=[]`, string(out))
	p.Stop()
	recs := warccheck.Dir(t, p.Dir)
	res := byType(t, recs, "response")
	require.Contains(t, res, origin.URL+"/curl?x=1")
	require.Contains(t, string(byType(t, recs, "request")[origin.URL+"/curl?x=1"].Block), "User-Agent: curl/")
}
