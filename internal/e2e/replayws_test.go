//go:build linux

// Chromium reads trusted roots from $HOME/.pki/nssdb only on Linux.

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// wsPageText is the paragraph browser-origin.mjs's page shows whatever
// its socket does.
const wsPageText = "This page talks to its server over a WebSocket."

// TestReplayWebPageWebSocket records, with Chromium through the proxy, a
// page that talks to its server over wss:// (messages both ways,
// compressed), then replays the WARC, and the WACZ `warcproxy wacz` packs
// it into, in ReplayWeb.page: the page's own text and image replay, the
// socket's resource record of messages does not get in the way, and the
// replay opens no socket to the live server. ReplayWeb.page 2.5.3 does not
// replay the messages themselves (docs/architecture.md, "WebSocket
// messages"): it indexes the record as a resource at its wss:// URL, which
// is checked, and what the page's script shows in the replay is only
// logged.
func TestReplayWebPageWebSocket(t *testing.T) {
	node, script := needWebSocketOrigin(t)
	rwp := needReplayWeb(t)
	origin := &wsOrigin{Name: "tls-deflate", TLS: true, Deflate: true}
	serverLog := startWSOrigins(t, node, script, []*wsOrigin{origin})
	p := proxytest.Start(t, func(c *config.Config) { c.WriterWorkers = 1 }) // one file to replay
	c := needCrawler(t, p.App.CACertFile())

	rep := c.crawl(t, p.URL.String(), crawlVisit{URL: origin.pageURL(), WaitFor: "ws:closed 4001"})
	if v := rep.Visits[0]; v.Result != "ws:closed 4001" {
		t.Fatalf("recording, the page shows %q (error %q), want %q", v.Result, v.Error, "ws:closed 4001")
	}
	p.Settle()
	p.Stop()
	recs := warccheck.Dir(t, p.Dir)
	checkHandshakeRecords(t, origin, recs)
	if !hasMessageRecord(recs, origin.socketURL()) {
		t.Fatalf("no resource record of %s's messages to replay beside the page", origin.socketURL())
	}
	warcs, err := filepath.Glob(filepath.Join(p.Dir, "*.warc.gz"))
	if err != nil || len(warcs) != 1 {
		t.Fatalf("want one .warc.gz in %s, found %q (%v)", p.Dir, warcs, err)
	}
	opened := socketsOpened(serverLog())

	for _, tc := range []struct {
		name    string
		archive func(t *testing.T) string
	}{
		{"warc.gz", func(*testing.T) string { return warcs[0] }},
		{"wacz", func(t *testing.T) string { return packWACZ(t, warcs[0]) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := rwp.replay(t, c.chromium, replayRun{
				archive: tc.archive(t),
				url:     origin.pageURL(),
				target:  origin.pageURL(),
				waitFor: wsPageText,
				name:    "websocket-" + tc.name,
				lookup:  origin.socketURL(),
			})
			checkReplayShows(t, rep, replayShows{
				target: origin.pageURL(),
				texts:  []string{wsPageText},
				images: map[string]int{"/img.png": 24},
			})
			checkMessagesIndexed(t, rep, origin.socketURL())
			if n := socketsOpened(serverLog()); n != opened {
				t.Errorf("the live server saw %d sockets open during the replay: the replay reached past the archive", n-opened)
			}
			t.Logf("the replayed page's text: %q", rep.Text)
		})
	}
}

// checkMessagesIndexed checks that ReplayWeb.page read the socket's
// message record into its index, as a capture of socketURL like any
// other resource record: what a later version that replays messages
// would look up.
func checkMessagesIndexed(t *testing.T, rep replayReport, socketURL string) {
	t.Helper()
	if rep.Lookup == nil || rep.Lookup.Error != "" {
		t.Errorf("asking ReplayWeb.page's index for %s failed: %+v", socketURL, rep.Lookup)
		return
	}
	if len(rep.Lookup.URLs) != 1 {
		t.Fatalf("ReplayWeb.page's index holds %d captures of %s, want the message record: %+v", len(rep.Lookup.URLs), socketURL, rep.Lookup.URLs)
	}
	if u := rep.Lookup.URLs[0]; u.URL != socketURL || !strings.HasPrefix(u.Mime, "application/jsonl") {
		t.Errorf("ReplayWeb.page indexed %s as %+v, want it as application/jsonl", socketURL, u)
	}
}

// hasMessageRecord reports whether recs hold a WebSocket message record
// of socketURL with at least one message in it.
func hasMessageRecord(recs []warccheck.Record, socketURL string) bool {
	for _, r := range recs {
		if r.Type == "resource" && r.TargetURI == socketURL &&
			r.Header["WARC-Resource-Type"] == "websocket" && len(r.Block) > 0 {
			return true
		}
	}
	return false
}

// socketsOpened counts the sockets browser-origin.mjs accepted.
func socketsOpened(log []wsMessage) int {
	n := 0
	for _, m := range log {
		if m.Event == "open" {
			n++
		}
	}
	return n
}
