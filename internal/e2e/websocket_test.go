package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// websocketDir holds the ws peers (origin.mjs, client.mjs) and the ws
// package, installed by `npm ci --prefix` it.
const websocketDir = "testdata/websocket"

// wsPeers runs the ws package's server and client.
type wsPeers struct {
	node, dir string
}

// needWS returns the peers, or skips the test (fails it under CI=true,
// where .ci/run installs the package).
func needWS(t *testing.T) *wsPeers {
	t.Helper()
	node := needTool(t, "nodejs", "node")
	dir, err := filepath.Abs(websocketDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ws", "package.json")); err != nil {
		msg := fmt.Sprintf("the ws package is not installed (%v): run `npm ci --prefix internal/e2e/%s`", err, websocketDir)
		if inCI() {
			t.Fatalf("%s (.ci/run does)", msg)
		}
		t.Skip(msg)
	}
	return &wsPeers{node: node, dir: dir}
}

// origin starts origin.mjs; its log is at the returned path once it is
// stopped (t.Cleanup, or the returned stop).
func (w *wsPeers) origin(t *testing.T, secure, deflate bool) (port int, logPath string, stop func()) {
	t.Helper()
	logPath = filepath.Join(t.TempDir(), "origin.jsonl")
	args := []string{filepath.Join(w.dir, "origin.mjs"), logPath}
	if secure {
		cert, key := writeTestCert(t)
		args = append(args, "--tls", cert, key)
	}
	if deflate {
		args = append(args, "--deflate")
	}
	cmd := exec.Command(w.node, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stop)
	var first struct{ Port int }
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &first) != nil || first.Port == 0 {
		t.Fatalf("origin.mjs did not say its port: %q, %v", line, err)
	}
	return first.Port, logPath, stop
}

// client runs client.mjs to its end through the proxy; its log is
// returned.
func (w *wsPeers) client(t *testing.T, p *proxytest.Proxy, url, mode string, deflate bool) []peerLine {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "client.jsonl")
	args := []string{filepath.Join(w.dir, "client.mjs"), url, p.URL.Host, p.App.CACertFile(), logPath, mode}
	if deflate {
		args = append(args, "--deflate")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, w.node, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("client.mjs %s: %v\n%s", mode, err, out)
	}
	return readPeerLog(t, logPath)
}

// peerLine is a line of peerlog.mjs.
type peerLine struct {
	Dir, Kind, Data, Reason string
	Code                    int
}

func readPeerLog(t *testing.T, path string) []peerLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []peerLine
	for l := range bytes.Lines(b) {
		var pl peerLine
		if err := json.Unmarshal(l, &pl); err != nil {
			t.Fatalf("%s: %v in %q", path, err, l)
		}
		lines = append(lines, pl)
	}
	return lines
}

// wsLine is a line of the WARC's message log.
type wsLine struct {
	TS          *float64 `json:"ts"`
	Type        string   `json:"type"`
	Opcode      int      `json:"opcode"`
	Mask        bool     `json:"mask"`
	PayloadData string   `json:"payloadData"`
	CloseCode   int      `json:"closeCode"`
	CloseReason string   `json:"closeReason"`
}

// wsRecords are the websocket resource records in p's WARCs (read by
// gowarc and warcio.js), in the order of their messages (the writer
// workers put them in different files), and the lines of all of them.
func wsRecords(t *testing.T, p *proxytest.Proxy) ([]warccheck.Record, []wsLine, map[string]warccheck.Record) {
	t.Helper()
	p.Stop()
	type withLines struct {
		r     warccheck.Record
		lines []wsLine
	}
	var recs []withLines
	byID := map[string]warccheck.Record{}
	for _, r := range warccheck.Dir(t, p.Dir) {
		byID[r.ID] = r
		if r.Type != "resource" || r.Header["WARC-Resource-Type"] != "websocket" {
			continue
		}
		wr := withLines{r: r}
		for l := range bytes.Lines(r.Block) {
			var wl wsLine
			if err := json.Unmarshal(l, &wl); err != nil || wl.TS == nil {
				t.Fatalf("record %s: line %q is not a message: %v", r.ID, l, err)
			}
			wr.lines = append(wr.lines, wl)
		}
		recs = append(recs, wr)
	}
	first := func(w withLines) float64 {
		if len(w.lines) == 0 {
			return -1
		}
		return *w.lines[0].TS
	}
	slices.SortFunc(recs, func(a, b withLines) int { return cmp.Compare(first(a), first(b)) })
	var out []warccheck.Record
	var lines []wsLine
	for _, w := range recs {
		out = append(out, w.r)
		lines = append(lines, w.lines...)
	}
	return out, lines, byID
}

// asPeer turns a WARC line into what a peer logs: data messages and
// pings as sent; pongs (which ws sends by itself) and close frames are
// checked apart.
func asPeer(l wsLine) (peerLine, bool) {
	dir := map[string]string{"send": "client", "recv": "server"}[l.Type]
	switch l.Opcode {
	case 1:
		return peerLine{Dir: dir, Kind: "text", Data: l.PayloadData}, true
	case 2:
		return peerLine{Dir: dir, Kind: "binary", Data: l.PayloadData}, true
	case 9:
		return peerLine{Dir: dir, Kind: "ping", Data: l.PayloadData}, true
	}
	return peerLine{}, false
}

// sentBy lists what a peer's log says it sent ("client" or "server"), and
// what the other one's says it received, in the same form.
func sentBy(who string, log []peerLine, sending bool) []peerLine {
	want := "recv"
	if sending {
		want = "send"
	}
	var out []peerLine
	for _, l := range log {
		if l.Dir == want && l.Kind != "close" && l.Kind != "pong" && (sending || l.Kind != "ping") {
			out = append(out, peerLine{Dir: who, Kind: l.Kind, Data: l.Data})
		}
	}
	return out
}

// TestWebSocketMessagesRecorded: ws talks to ws through the proxy, over
// ws:// and wss:// and with permessage-deflate; the WARC's message log
// holds what each end sent, in order, as each end logged it, the close
// frames with their code and reason, and links to the handshake.
func TestWebSocketMessagesRecorded(t *testing.T) {
	w := needWS(t)
	for _, tt := range []struct {
		name            string
		secure, deflate bool
	}{
		{"ws", false, false},
		{"wss", true, false},
		{"ws with permessage-deflate", false, true},
		{"wss with permessage-deflate", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			port, originLog, stopOrigin := w.origin(t, tt.secure, tt.deflate)
			p := proxytest.Start(t, nil)
			scheme := "ws"
			if tt.secure {
				scheme = "wss"
			}
			url := fmt.Sprintf("%s://localhost:%d/chat?room=1", scheme, port)
			clientLog := w.client(t, p, url, "close", tt.deflate)
			stopOrigin()
			serverLog := readPeerLog(t, originLog)
			recs, lines, byID := wsRecords(t, p)

			if len(recs) != 1 {
				t.Fatalf("%d websocket records, want 1", len(recs))
			}
			r := recs[0]
			if r.TargetURI != url {
				t.Errorf("WARC-Target-URI %q, want %q", r.TargetURI, url)
			}
			if ct := r.Header["Content-Type"]; !strings.HasPrefix(ct, "application/jsonl") {
				t.Errorf("Content-Type %q", ct)
			}
			if r.Header["WARC-Truncated"] != "" {
				t.Errorf("a socket closed by both ends is marked WARC-Truncated: %s", r.Header["WARC-Truncated"])
			}
			hs, ok := byID[r.Header["WARC-Concurrent-To"]]
			if !ok || hs.Type != "response" || !bytes.HasPrefix(hs.Block, []byte("HTTP/1.1 101")) {
				t.Errorf("WARC-Concurrent-To %q is not the handshake's 101 response record", r.Header["WARC-Concurrent-To"])
			}
			if tt.deflate && !bytes.Contains(hs.Block, []byte("permessage-deflate")) {
				t.Errorf("the handshake did not negotiate permessage-deflate:\n%s", hs.Block)
			}

			var fromClient, fromServer []peerLine
			var closes []wsLine
			for _, l := range lines {
				if l.Opcode == 8 {
					closes = append(closes, l)
				}
				if l.Type == "send" != l.Mask {
					t.Errorf("line %+v: mask %v on a %s frame", l, l.Mask, l.Type)
				}
				if pl, ok := asPeer(l); ok {
					if l.Type == "send" {
						fromClient = append(fromClient, pl)
					} else {
						fromServer = append(fromServer, pl)
					}
				}
			}
			checkSame(t, "client to server, as the client sent it", fromClient, sentBy("client", clientLog, true))
			checkSame(t, "client to server, as the server received it", withoutPings(fromClient), sentBy("client", serverLog, false))
			checkSame(t, "server to client, as the server sent it", fromServer, sentBy("server", serverLog, true))
			checkSame(t, "server to client, as the client received it", withoutPings(fromServer), sentBy("server", clientLog, false))
			if len(closes) != 2 || closes[0].CloseCode != 4000 || closes[0].CloseReason != "client done" || closes[0].Type != "send" ||
				closes[1].CloseCode != 4000 || closes[1].Type != "recv" {
				t.Errorf("close lines %+v, want the client's 4000 \"client done\" and the server's answer", closes)
			}
		})
	}
}

func withoutPings(l []peerLine) []peerLine {
	var out []peerLine
	for _, x := range l {
		if x.Kind != "ping" {
			out = append(out, x)
		}
	}
	return out
}

func checkSame(t *testing.T, what string, got, want []peerLine) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s:\n WARC %v\n peer %v", what, got, want)
	}
}

// TestWebSocketRecordCuts: a socket open longer than
// --websocket-record-time is cut into several records, the first ones
// WARC-Truncated: time, all linked to the handshake; a socket the client
// drops without a close frame ends with WARC-Truncated: disconnect.
func TestWebSocketRecordCuts(t *testing.T) {
	w := needWS(t)
	t.Run("time", func(t *testing.T) {
		port, _, _ := w.origin(t, false, false)
		p := proxytest.Start(t, func(c *config.Config) { c.WebSocketRecordTime = 400 * time.Millisecond })
		clientLog := w.client(t, p, fmt.Sprintf("ws://127.0.0.1:%d/ticker", port), "hold=1500", false)
		recs, lines, _ := wsRecords(t, p)
		if len(recs) < 3 {
			t.Fatalf("%d records for a socket open 1.5 s with a 400 ms limit, want at least 3", len(recs))
		}
		for i, r := range recs {
			want := "time"
			if i == len(recs)-1 {
				want = ""
			}
			if r.Header["WARC-Truncated"] != want {
				t.Errorf("record %d: WARC-Truncated %q, want %q", i, r.Header["WARC-Truncated"], want)
			}
			if r.Header["WARC-Concurrent-To"] != recs[0].Header["WARC-Concurrent-To"] {
				t.Errorf("record %d links to %s, the first to %s", i, r.Header["WARC-Concurrent-To"], recs[0].Header["WARC-Concurrent-To"])
			}
			if i > 0 && r.Date.Before(recs[i-1].Date) {
				t.Errorf("record %d dated %v, before the one before it (%v)", i, r.Date, recs[i-1].Date)
			}
		}
		var sent []peerLine
		for _, l := range lines {
			if pl, ok := asPeer(l); ok && l.Type == "send" {
				sent = append(sent, pl)
			}
		}
		checkSame(t, "client to server across the records", sent, sentBy("client", clientLog, true))
	})
	t.Run("disconnect", func(t *testing.T) {
		port, _, _ := w.origin(t, true, false)
		p := proxytest.Start(t, nil)
		w.client(t, p, fmt.Sprintf("wss://localhost:%d/", port), "drop", false)
		recs, lines, _ := wsRecords(t, p)
		if len(recs) != 1 || recs[0].Header["WARC-Truncated"] != "disconnect" {
			t.Fatalf("records %v, want one marked WARC-Truncated: disconnect", recs)
		}
		for _, l := range lines {
			if l.Opcode == 8 {
				t.Errorf("a close line %+v in a socket dropped without one", l)
			}
		}
		if len(lines) < 8 {
			t.Errorf("%d lines, want the messages before the drop", len(lines))
		}
	})
}

// TestWebSocketShutdown: at SIGTERM an open socket is closed and its
// record, marked disconnect, is written before the writer closes.
func TestWebSocketShutdown(t *testing.T) {
	w := needWS(t)
	port, _, _ := w.origin(t, false, false)
	p := proxytest.Start(t, nil)
	cmd := exec.Command(w.node, filepath.Join(w.dir, "client.mjs"), fmt.Sprintf("ws://127.0.0.1:%d/", port),
		p.URL.Host, p.App.CACertFile(), filepath.Join(t.TempDir(), "client.jsonl"), "hold=30000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	time.Sleep(1500 * time.Millisecond)
	recs, lines, _ := wsRecords(t, p) // shuts the proxy down
	if len(recs) != 1 || recs[0].Header["WARC-Truncated"] != "disconnect" {
		t.Fatalf("records %v, want one marked WARC-Truncated: disconnect", recs)
	}
	if len(lines) < 10 {
		t.Errorf("%d lines, want the messages of the 1.5 s before the shutdown", len(lines))
	}
}

// TestWebSocketMessagesOff: --websocket-messages=false records the
// handshake only, as before.
func TestWebSocketMessagesOff(t *testing.T) {
	w := needWS(t)
	port, _, _ := w.origin(t, false, true)
	p := proxytest.Start(t, func(c *config.Config) { c.WebSocketMessages = false })
	w.client(t, p, fmt.Sprintf("ws://127.0.0.1:%d/", port), "close", true)
	recs, _, byID := wsRecords(t, p)
	if len(recs) != 0 {
		t.Errorf("%d websocket records with --websocket-messages=false", len(recs))
	}
	var handshake bool
	for _, r := range byID {
		handshake = handshake || (r.Type == "response" && bytes.HasPrefix(r.Block, []byte("HTTP/1.1 101")))
	}
	if !handshake {
		t.Error("the handshake's 101 is not recorded")
	}
}

// writeTestCert writes httptest's certificate and key as PEM files, for
// a TLS origin (the proxy does not verify upstream certificates).
func writeTestCert(t *testing.T) (certPath, keyPath string) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS()
	c := srv.TLS.Certificates[0]
	srv.Close()
	key, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath
}

// TestHTTP2TunnelsOfferNoExtendedConnect: the proxy's HTTP/2 server in
// CONNECT tunnels does not advertise SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC
// 8441; Go ships it off), so a browser speaking HTTP/2 to the proxy opens
// its WebSockets on a tunnel of their own with an HTTP/1.1 upgrade (ALPN
// http/1.1), which TestWebSocketMessagesRecorded's wss cases take.
func TestHTTP2TunnelsOfferNoExtendedConnect(t *testing.T) {
	origin := newHoldOrigin(t)
	p := proxytest.Start(t, nil)
	tun, err := dialConnect(t.Context(), p.URL.Host, strings.TrimPrefix(origin.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	defer tun.Close()
	tc := tls.Client(tun, &tls.Config{RootCAs: p.CAPool, ServerName: "127.0.0.1", NextProtos: []string{"h2", "http/1.1"}})
	if err := tc.Handshake(); err != nil || tc.ConnectionState().NegotiatedProtocol != "h2" {
		t.Fatalf("handshake: %v, ALPN %q, want h2", err, tc.ConnectionState().NegotiatedProtocol)
	}
	if _, err := tc.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(tc, tc)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	_ = tc.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok {
		t.Fatalf("first frame %T, want SETTINGS", f)
	}
	if v, ok := sf.Value(http2.SettingEnableConnectProtocol); ok && v != 0 {
		t.Errorf("SETTINGS_ENABLE_CONNECT_PROTOCOL = %d: browsers would send WebSockets as extended CONNECT streams, which the proxy does not relay", v)
	}
}
