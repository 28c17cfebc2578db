package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHealthcheck runs `warcproxy healthcheck URL` as a process against
// real listeners: only a 200 exits 0, and every failure says why.
func TestHealthcheck(t *testing.T) {
	status := func(code int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }))
		t.Cleanup(srv.Close)
		return srv.URL + "/status"
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + l.Addr().String() + "/status"
	require.NoError(t, l.Close())

	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"200", []string{status(http.StatusOK)}, 0, ""},
		{"503", []string{status(http.StatusServiceUnavailable)}, 1, "503 Service Unavailable"},
		{"redirect", []string{status(http.StatusFound)}, 1, "302 Found"},
		{"closed port", []string{closed}, 1, "connection refused"},
		{"not a URL", []string{"127.0.0.1:9100"}, 1, "not an http:// or https:// URL"},
		{"two URLs", []string{closed, closed}, 1, "one URL at most"},
		{"help", []string{"--help"}, 0, "Usage: warcproxy healthcheck [URL]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := runMain(t, append([]string{"healthcheck"}, tt.args...)...)
			require.Equal(t, tt.code, code, out)
			if tt.out == "" {
				require.Empty(t, out)
			} else {
				require.Contains(t, out, tt.out)
			}
		})
	}
}

// TestHealthcheckTimeout: a listener that accepts and never answers is
// unhealthy once the timeout passes, not a hang.
func TestHealthcheckTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	start := time.Now()
	err := healthcheck(context.Background(), srv.URL+"/status", 300*time.Millisecond)
	require.ErrorContains(t, err, "no answer within 300ms")
	require.Less(t, time.Since(start), 3*time.Second)
}

// TestHealthcheckInUsage: --help states the default URL and timeout this
// file uses.
func TestHealthcheckInUsage(t *testing.T) {
	usage := strings.Join(strings.Fields(usageText()), " ")
	require.Contains(t, usage, "warcproxy healthcheck [URL]")
	require.Contains(t, usage, "defaults to "+defaultHealthURL)
	require.Contains(t, usage, "within "+healthTimeout.String())
}
