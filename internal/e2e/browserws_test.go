//go:build linux

// Chromium reads trusted roots from $HOME/.pki/nssdb only on Linux.

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// wsOrigin is one origin browser-origin.mjs serves: a page at / whose
// script opens a WebSocket to /socket.
type wsOrigin struct {
	Name    string `json:"name"`
	TLS     bool   `json:"tls"`
	Deflate bool   `json:"deflate"`
	port    int
}

func (o *wsOrigin) pageURL() string {
	if o.TLS {
		return fmt.Sprintf("https://127.0.0.1:%d/", o.port)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/", o.port)
}

func (o *wsOrigin) socketURL() string {
	if o.TLS {
		return fmt.Sprintf("wss://127.0.0.1:%d/socket", o.port)
	}
	return fmt.Sprintf("ws://127.0.0.1:%d/socket", o.port)
}

// wsMessage is one line of a message log, the page's (window.testLog) or
// browser-origin.mjs's: dir is the end's own view ("send": it sent it).
type wsMessage struct {
	Server    string `json:"server,omitempty"`
	Event     string `json:"event,omitempty"`
	Error     string `json:"error,omitempty"`
	Dir       string `json:"dir,omitempty"`
	Opcode    int    `json:"opcode,omitempty"`
	Data      string `json:"data,omitempty"`
	Code      int    `json:"code,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Fragments int    `json:"fragments,omitempty"`
	// Extensions are those the socket negotiated (the server's "open").
	Extensions string `json:"extensions,omitempty"`
}

// needWebSocketOrigin returns node and browser-origin.mjs, or skips (fails
// under CI=true).
func needWebSocketOrigin(t *testing.T) (node, script string) {
	t.Helper()
	peers := needWS(t)
	return peers.node, filepath.Join(peers.dir, "browser-origin.mjs")
}

// startWSOrigins runs browser-origin.mjs until the test ends, sets each
// origin's port, and returns a function reading the servers' message log.
func startWSOrigins(t *testing.T, node, script string, origins []*wsOrigin) func() []wsMessage {
	t.Helper()
	certFile, keyFile := writeTestCert(t)
	logFile := filepath.Join(t.TempDir(), "messages.jsonl")
	specs, err := json.Marshal(origins)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, script, "--servers", string(specs), "--log", logFile, "--cert", certFile, "--key", keyFile)
	cmd.Dir = filepath.Dir(script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if stderr.Len() > 0 {
			t.Logf("browser-origin.mjs stderr:\n%s", stderr.String())
		}
	})
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err != nil {
		t.Fatalf("browser-origin.mjs did not start: %v\n%s", err, stderr.String())
	}
	var ports map[string]int
	if err := json.Unmarshal(line, &ports); err != nil {
		t.Fatalf("browser-origin.mjs printed %q: %v", line, err)
	}
	for _, o := range origins {
		o.port = ports[o.Name]
	}
	return func() []wsMessage { return readWSLog(t, logFile) }
}

func readWSLog(t *testing.T, path string) []wsMessage {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []wsMessage
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m wsMessage
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("message log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// dataMessages are the text and binary messages of log going dir, in
// order, as "opcode data".
func dataMessages(log []wsMessage, dir string) []string {
	var out []string
	for _, m := range log {
		if m.Dir == dir && (m.Opcode == 1 || m.Opcode == 2) {
			out = append(out, fmt.Sprintf("%d %s", m.Opcode, m.Data))
		}
	}
	return out
}

// TestBrowserWebSocket: a page in Chromium, through the proxy, exchanges
// WebSocket messages with an origin served by the ws package: text and
// binary both ways, fragmented messages and a ping from the server, and a
// close with a code and reason from the page; over ws:// in a plain
// tunnel, with and without permessage-deflate, and over wss:// with it.
// What each end logged agrees, and the WARC holds the handshake and the
// messages as both ends saw them.
func TestBrowserWebSocket(t *testing.T) {
	node, script := needWebSocketOrigin(t)
	origins := []*wsOrigin{
		{Name: "plain", TLS: false, Deflate: false},
		{Name: "plain-deflate", TLS: false, Deflate: true},
		{Name: "tls-deflate", TLS: true, Deflate: true},
	}
	serverLog := startWSOrigins(t, node, script, origins)
	p := proxytest.Start(t, nil)
	c := needCrawler(t, p.App.CACertFile())

	visits := make([]crawlVisit, len(origins))
	for i, o := range origins {
		visits[i] = crawlVisit{URL: o.pageURL(), WaitFor: "ws:closed 4001"}
	}
	rep := c.crawl(t, p.URL.String(), visits...)
	// The server logs its side of the close after the page saw it.
	var srv []wsMessage
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		srv = serverLog()
		closes := 0
		for _, m := range srv {
			if m.Dir == "send" && m.Opcode == 8 {
				closes++
			}
		}
		if closes == len(origins) || time.Now().After(deadline) {
			break
		}
	}
	p.Settle()
	p.Stop()
	recs := warccheck.Dir(t, p.Dir)

	for i, o := range origins {
		t.Run(o.Name, func(t *testing.T) {
			v := rep.Visits[i]
			if v.Result != "ws:closed 4001" {
				t.Fatalf("the page shows %q (error %q), want %q", v.Result, v.Error, "ws:closed 4001")
			}
			var page, server []wsMessage
			if err := json.Unmarshal(v.PageLog, &page); err != nil {
				t.Fatalf("the page's log %s: %v", v.PageLog, err)
			}
			for _, m := range srv {
				if m.Server == o.Name {
					server = append(server, m)
				}
			}
			defer func() {
				if t.Failed() {
					t.Logf("the page logged %+v", page)
					t.Logf("the server logged %+v", server)
				}
			}()
			checkEndsAgree(t, o, page, server)
			handshake := checkHandshakeRecords(t, o, recs)
			checkMessageRecord(t, o, recs, handshake, page, server)
		})
	}
}

// checkEndsAgree checks the two logs against each other: what one end
// sent the other received, in order, and the close went both ways with
// the page's code and reason.
func checkEndsAgree(t *testing.T, o *wsOrigin, page, server []wsMessage) {
	t.Helper()
	for _, m := range server {
		if m.Error != "" {
			t.Errorf("the server's socket failed: %s", m.Error)
		}
		if m.Event == "open" {
			if got := strings.Contains(m.Extensions, "permessage-deflate"); got != o.Deflate {
				t.Errorf("permessage-deflate negotiated: %v, want %v (%+v)", got, o.Deflate, m)
			}
		}
	}
	if s, r := dataMessages(page, "send"), dataMessages(server, "recv"); !slices.Equal(s, r) {
		t.Errorf("the page sent %q, the server received %q", s, r)
	}
	if s, r := dataMessages(server, "send"), dataMessages(page, "recv"); !slices.Equal(s, r) {
		t.Errorf("the server sent %q, the page received %q", s, r)
	}
	if n := len(dataMessages(page, "send")) + len(dataMessages(page, "recv")); n != 7 {
		t.Errorf("the page logged %d text and binary messages, want 7 (2 sent, 5 received)", n)
	}
	wantClose := wsMessage{Dir: "recv", Opcode: 8, Code: 4001, Reason: "page done"}
	if !slices.ContainsFunc(server, func(m wsMessage) bool { m.Server = ""; return m == wantClose }) {
		t.Errorf("the server never received the page's close (4001, page done)")
	}
}

// checkHandshakeRecords checks that the upgrade's request and its 101
// response are recorded, linked, whole, and returns the response's ID.
func checkHandshakeRecords(t *testing.T, o *wsOrigin, recs []warccheck.Record) string {
	t.Helper()
	var resp, req *warccheck.Record
	for i, r := range recs {
		if !strings.HasSuffix(r.TargetURI, fmt.Sprintf("127.0.0.1:%d/socket", o.port)) {
			continue
		}
		switch r.Type {
		case "response":
			resp = &recs[i]
		case "request":
			req = &recs[i]
		}
	}
	if resp == nil || req == nil {
		t.Fatalf("no request and response records of the handshake to %s", o.socketURL())
	}
	t.Logf("handshake records: %s %s, %s %s", req.Type, req.TargetURI, resp.Type, resp.TargetURI)
	if !bytes.HasPrefix(resp.Block, []byte("HTTP/1.1 101 ")) {
		t.Errorf("the handshake's response record holds %.40q, want a 101", resp.Block)
	}
	if req.Header["WARC-Concurrent-To"] != resp.ID {
		t.Errorf("the handshake's request record names %q, its response is %s", req.Header["WARC-Concurrent-To"], resp.ID)
	}
	if !bytes.Contains(bytes.ToLower(req.Block), []byte("upgrade: websocket")) {
		t.Errorf("the handshake's request record has no Upgrade: websocket:\n%s", req.Block)
	}
	return resp.ID
}

// messageLine is one line of the WARC's message record (docs/architecture.md,
// "WebSocket messages"): browsertrix-crawler's layout, after Chrome
// DevTools' WebSocketFrame.
type messageLine struct {
	TS          *float64 `json:"ts"`
	Type        string   `json:"type"`
	Opcode      int      `json:"opcode"`
	Mask        *bool    `json:"mask"`
	PayloadData *string  `json:"payloadData"`
	CloseCode   int      `json:"closeCode"`
	CloseReason string   `json:"closeReason"`
}

// checkMessageRecord checks the socket's resource record of messages
// against both ends' logs: the page's messages are the "send" lines (a
// masked frame each, as a browser sends them), the server's the "recv"
// ones, fragments joined and permessage-deflate undone; the server's
// ping, the browser's pong and both close frames are lines of their own.
func checkMessageRecord(t *testing.T, o *wsOrigin, recs []warccheck.Record, handshakeID string, page, server []wsMessage) {
	t.Helper()
	var res []warccheck.Record
	for _, r := range recs {
		if r.Type == "resource" && r.TargetURI == o.socketURL() {
			res = append(res, r)
		}
	}
	if len(res) != 1 {
		t.Fatalf("%d resource records of %s, want one", len(res), o.socketURL())
	}
	r := res[0]
	for name, want := range map[string]string{
		"WARC-Resource-Type": "websocket",
		"WARC-Concurrent-To": handshakeID,
		"WARC-Truncated":     "",
	} {
		if got := r.Header[name]; got != want {
			t.Errorf("message record's %s is %q, want %q", name, got, want)
		}
	}
	if ct := r.Header["Content-Type"]; !strings.HasPrefix(ct, "application/jsonl") {
		t.Errorf("message record's Content-Type is %q, want application/jsonl", ct)
	}
	var lines []messageLine
	last := 0.0
	for i, l := range bytes.Split(bytes.TrimSuffix(r.Block, []byte("\n")), []byte("\n")) {
		var m messageLine
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("message record line %d %q: %v", i+1, l, err)
		}
		if m.TS == nil || m.Mask == nil || m.PayloadData == nil || (m.Type != "send" && m.Type != "recv") {
			t.Errorf("message record line %d %q lacks ts, type, mask or payloadData", i+1, l)
			continue
		}
		if *m.TS < last {
			t.Errorf("message record line %d: ts %v after %v", i+1, *m.TS, last)
		}
		last = *m.TS
		if *m.Mask != (m.Type == "send") {
			t.Errorf("message record line %d %q: mask %v, but a browser masks what it sends and a server does not", i+1, l, *m.Mask)
		}
		lines = append(lines, m)
	}
	asLog := func(typ string) []wsMessage {
		var out []wsMessage
		for _, m := range lines {
			if m.Type == typ {
				out = append(out, wsMessage{Dir: "send", Opcode: m.Opcode, Data: *m.PayloadData, Code: m.CloseCode, Reason: m.CloseReason})
			}
		}
		return out
	}
	sent, received := asLog("send"), asLog("recv")
	if got, want := dataMessages(sent, "send"), dataMessages(page, "send"); !slices.Equal(got, want) {
		t.Errorf("the record's send lines hold %q, the page sent %q", got, want)
	}
	if got, want := dataMessages(received, "send"), dataMessages(server, "send"); !slices.Equal(got, want) {
		t.Errorf("the record's recv lines hold %q, the server sent %q", got, want)
	}
	ping := "YXJlIHlvdSB0aGVyZQ==" // "are you there", as the server logged it
	for _, want := range []struct {
		lines  []wsMessage
		opcode int
		what   string
	}{{received, 9, "the server's ping"}, {sent, 10, "the browser's pong"}} {
		if !slices.ContainsFunc(want.lines, func(m wsMessage) bool { return m.Opcode == want.opcode && m.Data == ping }) {
			t.Errorf("no line of opcode %d with payload %s: %s is not recorded", want.opcode, ping, want.what)
		}
	}
	for _, want := range []struct {
		lines []wsMessage
		what  string
	}{{sent, "the page's close"}, {received, "the server's answering close"}} {
		if !slices.ContainsFunc(want.lines, func(m wsMessage) bool {
			return m.Opcode == 8 && m.Code == 4001 && m.Reason == "page done"
		}) {
			t.Errorf("no opcode 8 line with closeCode 4001 and closeReason %q: %s is not recorded", "page done", want.what)
		}
	}
	// 2 messages from the page, 5 from the server, a ping, a pong, two
	// closes: nothing else crossed the socket.
	if len(lines) != 11 {
		t.Errorf("the message record has %d lines, want 11:\n%s", len(lines), r.Block)
	}
}
