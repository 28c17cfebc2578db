package e2e

import (
	"bytes"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
)

// TestHTTP2OversizedHeaderList: a client that ignores the advertised
// SETTINGS_MAX_HEADER_LIST_SIZE and sends a header list far over
// --max-header-bytes loses its connection (Go's HTTP/2 server ends it
// with a GOAWAY rather than answer 431 on the stream), and the proxy counts
// and logs that as a refused client request; it keeps serving others.
func TestHTTP2OversizedHeaderList(t *testing.T) {
	origin := newHoldOrigin(t)
	p := proxytest.StartLogged(t, func(c *config.Config) { c.MaxHeaderBytes = 64 << 10 })
	host := strings.TrimPrefix(origin.URL, "https://")
	tun, err := dialConnect(t.Context(), p.URL.Host, host)
	require.NoError(t, err)
	defer tun.Close()
	tc := tls.Client(tun, &tls.Config{RootCAs: p.CAPool, ServerName: "127.0.0.1", NextProtos: []string{"h2"}})
	require.NoError(t, tc.Handshake())
	require.Equal(t, "h2", tc.ConnectionState().NegotiatedProtocol)

	_, err = tc.Write([]byte(http2.ClientPreface))
	require.NoError(t, err)
	fr := http2.NewFramer(tc, tc)
	require.NoError(t, fr.WriteSettings())
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", host}, {":path", "/big"}} {
		require.NoError(t, enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
	}
	require.NoError(t, enc.WriteField(hpack.HeaderField{Name: "x-big", Value: strings.Repeat("b", 1<<20)}))
	writeHeaderBlock(t, fr, 1, block.Bytes())

	_ = tc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var goAway *http2.GoAwayFrame
	for goAway == nil {
		f, err := fr.ReadFrame()
		require.NoError(t, err, "a GOAWAY before the connection ends")
		goAway, _ = f.(*http2.GoAwayFrame)
	}
	require.NotEqual(t, http2.ErrCodeNo, goAway.ErrCode)
	require.Zero(t, origin.received.Load(), "nothing forwarded")
	require.Eventually(t, func() bool { return p.Status(t)["client_errors"] == float64(1) }, 5*time.Second, 20*time.Millisecond)
	require.Contains(t, p.Log(), "ended an HTTP/2 connection over the client's frames")

	_, body := fetch(t, p.Client(), origin.URL+"/quick", "")
	require.Equal(t, "quick /quick", body, "the proxy serves on")
}

// writeHeaderBlock sends block as one HEADERS frame and as many
// CONTINUATION frames as the default frame size needs.
func writeHeaderBlock(t *testing.T, fr *http2.Framer, stream uint32, block []byte) {
	const max = 16 << 10
	first := block[:min(len(block), max)]
	block = block[len(first):]
	require.NoError(t, fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: first, EndStream: true, EndHeaders: len(block) == 0}))
	for len(block) > 0 {
		n := min(len(block), max)
		if err := fr.WriteContinuation(stream, n == len(block), block[:n]); err != nil {
			return // the server may end the connection before the last frame
		}
		block = block[n:]
	}
}
