package proxy_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/capture"
	"github.com/warcproxy/warcproxy/internal/digest"
	"github.com/warcproxy/warcproxy/internal/spool"
	"github.com/warcproxy/warcproxy/mitm"
	"github.com/warcproxy/warcproxy/proxy"
	"github.com/warcproxy/warcproxy/warcproxmeta"
	"github.com/warcproxy/warcproxy/wire"
)

// fakeSink stands in for the capture stage: it records what the front end
// hands it, so forward is tested without a writer or stores.
type fakeSink struct {
	spooler   *spool.Spooler
	limit     *warcproxmeta.LimitReached
	badPrefix string // CheckPrefix refuses it

	mu        sync.Mutex
	submitted []*capture.Exchange
	responses []string // the recorded response bytes, read at Submit
	failed    []string // FetchFailed kinds
	abandoned int
}

func (f *fakeSink) CheckPrefix(prefix string) error {
	if prefix == f.badPrefix {
		return errors.New("invalid warc prefix " + strconv.Quote(prefix))
	}
	return nil
}

func (f *fakeSink) CheckLimits(context.Context, string, *warcproxmeta.Meta) (*warcproxmeta.LimitReached, error) {
	return f.limit, nil
}

func (f *fakeSink) Open(ex *capture.Exchange) {
	ex.Request = wire.NewRecorder(f.spooler, digest.SHA1, nil)
	ex.Response = wire.NewRecorder(f.spooler, digest.SHA1, nil)
}

func (f *fakeSink) Rerecord(ex *capture.Exchange) { f.Open(ex) }

func (f *fakeSink) Submit(ex *capture.Exchange) {
	b := make([]byte, ex.ResEnd-ex.ResStart)
	_, _ = ex.Response.Buffer().ReadAt(b, ex.ResStart)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.submitted = append(f.submitted, ex)
	f.responses = append(f.responses, string(b))
}

func (f *fakeSink) Abandon(*capture.Exchange) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.abandoned++
}

func (f *fakeSink) FetchFailed(_ *capture.Exchange, kind string, _ error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = append(f.failed, kind)
}

func (f *fakeSink) WriteRecord(*capture.Record, io.Reader) error { return nil }

func (f *fakeSink) OpenWebSocket(*capture.Exchange) *capture.WebSocket { return nil }

type idleBacklog struct{}

func (idleBacklog) FullFor() time.Duration { return 0 }

// startFrontEnd runs the front end alone, with sink behind it.
func startFrontEnd(t *testing.T, sink *fakeSink) *url.URL {
	t.Helper()
	dir := t.TempDir()
	sp, err := spool.New(dir, 1<<20, 8<<20)
	require.NoError(t, err)
	sink.spooler = sp
	ca, err := mitm.LoadOrCreateCA(filepath.Join(dir, "ca.pem"), "", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	s, err := proxy.New(proxy.Options{
		CA: ca, Capture: sink, Backlog: idleBacklog{}, Prefix: "test", MaxConns: 10,
		ConnWaitTimeout: time.Second, IdleTimeout: time.Second, HeaderTimeout: time.Second,
		Upstream: wire.Options{SocketTimeout: 2 * time.Second},
	}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx, ctx))
	})
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

func proxyClient(p *url.URL) *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(p)}, Timeout: 10 * time.Second}
}

// forward hands the sink the exchange as fetched: the response record is
// the bytes from the final status line to the end of the body, and the
// request's fields are filled in.
func TestForwardSubmitsToTheSink(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "hello from "+r.URL.Path)
	}))
	defer origin.Close()
	sink := &fakeSink{}
	p := startFrontEnd(t, sink)
	resp, err := proxyClient(p).Get(origin.URL + "/a?b=c")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, "hello from /a", string(body))

	require.Eventually(t, func() bool { sink.mu.Lock(); defer sink.mu.Unlock(); return len(sink.submitted) == 1 }, 5*time.Second, 5*time.Millisecond)
	ex := sink.submitted[0]
	require.Equal(t, origin.URL+"/a?b=c", ex.TargetURI)
	require.Equal(t, "test", ex.Prefix)
	require.Equal(t, 200, ex.Status)
	require.Equal(t, "text/plain", ex.ContentType)
	require.Equal(t, "127.0.0.1", ex.IP)
	require.Equal(t, int64(len("hello from /a")), ex.Payload.N)
	require.True(t, strings.HasPrefix(sink.responses[0], "HTTP/1.1 200 OK\r\n"), sink.responses[0])
	require.True(t, strings.HasSuffix(sink.responses[0], "\r\n\r\nhello from /a"), sink.responses[0])
	require.Empty(t, ex.Truncated)
}

// An origin that cannot be reached: 502 to the client, FetchFailed with
// the kind, and the exchange abandoned, never submitted.
func TestForwardFetchFailed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	ln.Close()
	sink := &fakeSink{}
	p := startFrontEnd(t, sink)
	resp, err := proxyClient(p).Get("http://" + closed + "/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusBadGateway, resp.StatusCode)
	require.Contains(t, string(body), "connection refused")
	sink.mu.Lock()
	defer sink.mu.Unlock()
	require.Equal(t, []string{"refused"}, sink.failed)
	require.Empty(t, sink.submitted)
	require.Equal(t, 1, sink.abandoned)
}

// A limit the stage reports reached is answered 420 with warcprox's
// header, and nothing is fetched.
func TestForwardLimitReached(t *testing.T) {
	var fetched atomic.Bool
	origin := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { fetched.Store(true) }))
	defer origin.Close()
	sink := &fakeSink{limit: &warcproxmeta.LimitReached{Key: "job/total/urls", Limit: 1, Bucket: "job", Stats: []byte(`{"bucket":"job"}`)}}
	p := startFrontEnd(t, sink)
	req, _ := http.NewRequest(http.MethodGet, origin.URL+"/", nil)
	req.Header.Set("Warcprox-Meta", `{"limits":{"job/total/urls":1}}`)
	resp, err := proxyClient(p).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 420, resp.StatusCode)
	require.Equal(t, "420 Reached limit", resp.Status)
	require.JSONEq(t, `{"stats":{"job":{"bucket":"job"}},"reached-limit":{"job/total/urls":1}}`, resp.Header.Get("Warcprox-Meta"))
	require.False(t, fetched.Load())
	sink.mu.Lock()
	defer sink.mu.Unlock()
	require.Empty(t, sink.submitted)
}

// A warc-prefix the stage refuses is answered 400 with its reason, before
// anything is fetched; one it accepts names the exchange's files.
func TestAdmitAsksTheSinkAboutThePrefix(t *testing.T) {
	var fetches atomic.Int32
	origin := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { fetches.Add(1) }))
	defer origin.Close()
	sink := &fakeSink{badPrefix: ".hidden"}
	p := startFrontEnd(t, sink)
	for _, tt := range []struct {
		prefix string
		status int
		body   string
	}{
		{".hidden", http.StatusBadRequest, `field "warc-prefix": invalid warc prefix ".hidden"`},
		{"job1", http.StatusOK, ""},
	} {
		t.Run(tt.prefix, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, origin.URL+"/", nil)
			req.Header.Set("Warcprox-Meta", `{"warc-prefix":"`+tt.prefix+`"}`)
			resp, err := proxyClient(p).Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, tt.status, resp.StatusCode, string(body))
			require.Contains(t, string(body), tt.body)
		})
	}
	require.Equal(t, int32(1), fetches.Load(), "only the accepted prefix is fetched")
	require.Eventually(t, func() bool { sink.mu.Lock(); defer sink.mu.Unlock(); return len(sink.submitted) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, "job1", sink.submitted[0].Prefix)
}

// A chunked body whose framing breaks (a bad chunk size line) is cut off
// for the client and handed over marked, for the stage to re-cut: the
// front end does not touch the recording.
func TestForwardMarksBrokenFraming(t *testing.T) {
	const head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Read(make([]byte, 4096))
		_, _ = io.WriteString(c, head+"5\r\nhello\r\nzz\r\n")
	}()
	sink := &fakeSink{}
	p := startFrontEnd(t, sink)
	resp, err := proxyClient(p).Get("http://" + ln.Addr().String() + "/")
	require.NoError(t, err)
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Error(t, err, "the client must see the body is incomplete")

	require.Eventually(t, func() bool { sink.mu.Lock(); defer sink.mu.Unlock(); return len(sink.submitted) == 1 }, 5*time.Second, 5*time.Millisecond)
	ex := sink.submitted[0]
	require.True(t, ex.BrokenFraming)
	require.Equal(t, capture.TruncDisconnect, ex.Truncated)
	require.True(t, strings.HasPrefix(sink.responses[0], head+"5\r\nhello\r\n"), "handed over as read: %q", sink.responses[0])
}
