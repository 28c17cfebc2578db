package bench

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOriginFaults(t *testing.T) {
	srv := httptest.NewServer(NewOrigin())
	defer srv.Close()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for _, tc := range []struct {
		path     string
		head     bool  // a response head arrives
		body     int64 // bytes before the body breaks off (or all of it)
		bodyErr  bool
		minDelay time.Duration
	}{
		{"/reset/64KB", true, 32 << 10, true, 0},
		{"/stall/1KB/300", true, 2 << 10, false, 300 * time.Millisecond},
		{"/stall/0/300", true, 0, false, 300 * time.Millisecond},
		{"/garbage/head", false, 0, false, 0},
		{"/garbage/chunk", true, 1024, true, 0},
		{"/drip/1KB/4/50", true, 4 << 10, false, 150 * time.Millisecond},
	} {
		t.Run(tc.path, func(t *testing.T) {
			start := time.Now()
			resp, err := c.Get(srv.URL + tc.path)
			if !tc.head {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, "1", resp.Header.Get(OriginHeader))
			n, err := io.Copy(io.Discard, resp.Body)
			if tc.bodyErr {
				require.Error(t, err)
				require.LessOrEqual(t, n, tc.body)
			} else {
				require.NoError(t, err)
				require.Equal(t, tc.body, n)
			}
			require.GreaterOrEqual(t, time.Since(start), tc.minDelay)
		})
	}
}
