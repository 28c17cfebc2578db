package e2e

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
)

// BenchmarkWebSocketMessages sends b.N masked text messages of 128 bytes
// through one socket of the proxy (plain ws://, origin in the same
// process, discarding them) and reports messages per second, and the
// process's resident memory at the end and at its peak (VmRSS, VmHWM:
// proxy, origin and client together). paced=10000/s sends at 10,000
// messages a second, as the issue asks; recording=off is
// --websocket-messages=false, the relay alone.
func BenchmarkWebSocketMessages(b *testing.B) {
	for _, bc := range []struct {
		name      string
		recording bool
		rate      int // messages a second; 0: as fast as they go
	}{
		{"recording=on/paced=none", true, 0},
		{"recording=off/paced=none", false, 0},
		{"recording=on/paced=10000", true, 10000},
	} {
		b.Run(bc.name, func(b *testing.B) {
			origin := httptest.NewServer(http.HandlerFunc(discardingWebSocket))
			defer origin.Close()
			p := proxytest.Start(b, func(c *config.Config) {
				c.WebSocketMessages = bc.recording
				c.WebSocketRecordTime = 5 * time.Second
			})
			conn := upgradeThrough(b, p, origin.URL)
			defer conn.Close()
			frame := maskedText(strings.Repeat("m", 128))
			batch := 1
			if bc.rate > 0 {
				batch = bc.rate / 100 // every 10 ms
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			start := time.Now()
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			w := bufio.NewWriterSize(conn, 64<<10)
			sent := 0
			for b.Loop() {
				if _, err := w.Write(frame); err != nil {
					b.Fatal(err)
				}
				sent++
				if bc.rate > 0 && sent%batch == 0 {
					_ = w.Flush()
					<-tick.C
				}
			}
			_ = w.Flush()
			b.ReportMetric(float64(sent)/time.Since(start).Seconds(), "msgs/s")
			runtime.GC()
			rss, hwm := procStatusMB("VmRSS:"), procStatusMB("VmHWM:")
			b.ReportMetric(rss, "RSS-MB")
			b.ReportMetric(hwm, "peakRSS-MB")
		})
	}
}

// discardingWebSocket accepts a WebSocket handshake and reads the socket
// to its end.
func discardingWebSocket(w http.ResponseWriter, r *http.Request) {
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
	_, _ = io.Copy(io.Discard, brw)
}

// upgradeThrough opens a WebSocket to origin through the proxy's plain
// port (an absolute-form upgrade request).
func upgradeThrough(tb testing.TB, p *proxytest.Proxy, origin string) net.Conn {
	tb.Helper()
	conn, err := net.Dial("tcp", p.URL.Host)
	if err != nil {
		tb.Fatal(err)
	}
	host := strings.TrimPrefix(origin, "http://")
	fmt.Fprintf(conn, "GET %s/socket HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", origin, host)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		tb.Fatalf("upgrade through the proxy: %v %v", resp, err)
	}
	return conn
}

// maskedText is a client's text frame.
func maskedText(s string) []byte {
	key := [4]byte{1, 2, 3, 4}
	f := []byte{0x81}
	if len(s) < 126 {
		f = append(f, 0x80|byte(len(s)))
	} else {
		f = append(f, 0x80|126)
		f = binary.BigEndian.AppendUint16(f, uint16(len(s)))
	}
	f = append(f, key[:]...)
	for i := range len(s) {
		f = append(f, s[i]^key[i%4])
	}
	return f
}

// procStatusMB reads a field of /proc/self/status in MiB (0 elsewhere).
func procStatusMB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for l := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(l, field); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
