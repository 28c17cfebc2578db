package main

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNoLeaksAfterMixedLoad: after mixed load (plain and HTTPS, clients
// that hang up mid-body, origins that reset), the proxy's goroutines and
// open file descriptors, as its own /metrics reports them, come back to
// where they were after the same load without faults.
func TestNoLeaksAfterMixedLoad(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Length", strconv.Itoa(8<<20))
			chunk := strings.Repeat("b", 64<<10)
			for range 128 {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
		case "/reset":
			w.Header().Set("Content-Length", "100000")
			_, _ = io.WriteString(w, "half a body")
			w.(http.Flusher).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		default:
			_, _ = io.WriteString(w, strings.Repeat("o", 16<<10))
		}
	})
	plain, secure := httptest.NewServer(handler), httptest.NewTLSServer(handler)
	defer plain.Close()
	defer secure.Close()
	dir := t.TempDir()
	p := startMain(t, "--port", "0", "--dir", filepath.Join(dir, "warcs"), "--cacert", filepath.Join(dir, "ca.pem"))
	proxyURL, _ := url.Parse("http://127.0.0.1:" + p.port)
	client := &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(proxyURL),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the proxy's leaf; its CA is tested elsewhere
	}, Timeout: 30 * time.Second}

	get := func(u string, keep int) {
		resp, err := client.Get(u)
		if err != nil {
			return // the reset origin, as the client sees it
		}
		if keep >= 0 {
			_, _ = io.CopyN(io.Discard, resp.Body, int64(keep)) // then hang up mid-body
		} else {
			_, _ = io.Copy(io.Discard, resp.Body)
		}
		resp.Body.Close()
	}
	load := func(faults bool) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					get(plain.URL+"/ok", -1)
					get(secure.URL+"/ok", -1)
					if faults {
						get(plain.URL+"/big", 64<<10)
						get(secure.URL+"/big", 64<<10)
						get(plain.URL+"/reset", -1)
					}
				}
			}()
		}
		wg.Wait()
		client.CloseIdleConnections()
	}
	metrics := func() (goroutines, fds float64) {
		resp, err := http.Get(proxyURL.String() + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var v float64
			if _, err := fmt.Sscanf(sc.Text(), "go_goroutines %g", &v); err == nil {
				goroutines = v
			}
			if _, err := fmt.Sscanf(sc.Text(), "process_open_fds %g", &v); err == nil {
				fds = v
			}
		}
		return goroutines, fds
	}

	load(false)
	time.Sleep(500 * time.Millisecond)
	baseG, baseF := metrics()
	load(true)
	var g, f float64
	require.Eventually(t, func() bool {
		g, f = metrics()
		// A few either way: idle pooled origin connections come and go.
		// A leak would be one per faulty exchange, 120 of them.
		return g <= baseG+5 && f <= baseF+10
	}, 15*time.Second, 250*time.Millisecond, "goroutines %v (after plain load %v), fds %v (after plain load %v)", g, baseG, f, baseF)
	t.Logf("goroutines %v → %v, open fds %v → %v", baseG, g, baseF, f)
}
