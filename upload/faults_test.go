package upload

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// front is a fault-injecting reverse proxy before the real store: fault
// answers a request instead of the store when it returns true.
func front(t *testing.T, store string, fault func(w http.ResponseWriter, r *http.Request) bool) string {
	t.Helper()
	u, err := url.Parse(store)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fault(w, r) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func s3Error(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>` + code + `</Code><Message>injected</Message></Error>`))
}

// 503 SlowDown answers are waited out: the file goes up once the store
// takes it, and they are counted as slowdown. (The SDK's own back-off
// between its attempts reads nothing of the body: the stall timeout is
// longer than that, as the default minute is.)
func TestSlowDown(t *testing.T) {
	r := newRig(t)
	var puts atomic.Int32
	r.opts.Store = r.newStore(t, front(t, r.srv.Endpoint, func(w http.ResponseWriter, req *http.Request) bool {
		if req.Method == http.MethodPut && puts.Add(1) <= 4 {
			s3Error(w, http.StatusServiceUnavailable, "SlowDown")
			return true
		}
		return false
	}), 30*time.Second)
	warc, b := r.file(t, "a.warc.gz", 10000)
	s := r.ship(t, time.Minute, Unit{Path: warc, Kind: KindWARC})
	require.Equal(t, b, r.object(t, "crawl/a.warc.gz"))
	require.Positive(t, metric(t, s, "failures_total", ReasonSlowDown))
	require.Greater(t, puts.Load(), int32(4))
}

// A store that refuses the SDK's default integrity checksums gets the
// file without them, and every later one too; that is logged once.
func TestChecksumsRefused(t *testing.T) {
	r := newRig(t)
	var refused, withChecksum atomic.Int32
	r.opts.Store = r.newStore(t, front(t, r.srv.Endpoint, func(w http.ResponseWriter, req *http.Request) bool {
		if req.Method != http.MethodPut {
			return false
		}
		for name := range req.Header {
			n := strings.ToLower(name)
			if strings.HasPrefix(n, "x-amz-checksum-") || n == "x-amz-trailer" || n == "x-amz-sdk-checksum-algorithm" {
				withChecksum.Add(1)
				refused.Add(1)
				s3Error(w, http.StatusNotImplemented, "NotImplemented")
				return true
			}
		}
		return false
	}))
	a, ab := r.file(t, "a.warc.gz", 10000)
	big, bigb := r.file(t, "big.warc.gz", 11<<20)
	r.opts.Workers = 1 // the multipart upload meets the refusal first
	r.ship(t, time.Minute, Unit{Path: big, Kind: KindWARC}, Unit{Path: a, Kind: KindWARC})
	require.Equal(t, ab, r.object(t, "crawl/a.warc.gz"))
	require.Equal(t, bigb, r.object(t, "crawl/big.warc.gz"))
	require.Positive(t, refused.Load(), "the SDK sent its checksums at first")
	require.Equal(t, 1, strings.Count(r.logs.String(), "refused the SDK's default integrity checksums"))
}
