package upload

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/redistest"
)

// warcFile writes a plain WARC of n records, dated a second apart.
func (r *rig) warcFile(t *testing.T, rel string, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		body := fmt.Sprintf("record %d", i)
		fmt.Fprintf(&b, "WARC/1.0\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-00000000000%d>\r\n"+
			"WARC-Date: 2026-12-04T10:00:0%dZ\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n", i, i, len(body), body)
	}
	path := filepath.Join(r.dir, rel)
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// receiver is an HTTP webhook that refuses the first refuse POSTs.
type receiver struct {
	mu     sync.Mutex
	refuse int
	events []Event
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.refuse > 0 {
		rc.refuse--
		http.Error(w, "not now", http.StatusServiceUnavailable)
		return
	}
	body, _ := io.ReadAll(req.Body)
	var e Event
	if err := json.Unmarshal(body, &e); err != nil || req.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "bad event", http.StatusBadRequest)
		return
	}
	rc.events = append(rc.events, e)
}

func (rc *receiver) got() []Event {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Event(nil), rc.events...)
}

// Each file confirmed by the store is announced once the store has it,
// retried while the receiver refuses: a WARC with its records, dates and
// prefix, its index as kind cdxj.
func TestEventsPosted(t *testing.T) {
	r := newRig(t)
	rc := &receiver{refuse: 2}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	n, err := NewNotifier(srv.URL + "/hook")
	require.NoError(t, err)
	r.opts.Notifier = n
	r.opts.PrefixOf = func(string) string { return "jobA" }
	warc := r.warcFile(t, "jobA-1.warc", 3)
	idx, _ := r.file(t, "jobA-1.cdxj", 100)
	s := r.ship(t, time.Minute, Unit{Path: warc, Kind: KindWARC, With: []Companion{{idx, KindCDXJ}}})

	events := rc.got()
	require.Len(t, events, 2)
	w, c := events[0], events[1]
	obj, err := r.store.Head(context.Background(), "crawl/jobA-1.warc")
	require.NoError(t, err)
	require.Equal(t, Event{ID: eventID("crawl/jobA-1.warc", obj.SHA256), Kind: KindWARC, Filename: "jobA-1.warc",
		Key: "crawl/jobA-1.warc", URL: "s3://archive/crawl/jobA-1.warc", Size: obj.Size, SHA256: obj.SHA256, Hash: obj.SHA256,
		Records: 3, FirstDate: "2026-12-04T10:00:00Z", LastDate: "2026-12-04T10:00:02Z", WARCPrefix: "jobA", Completed: true}, w)
	require.Equal(t, KindCDXJ, c.Kind)
	require.Equal(t, "crawl/jobA-1.cdxj", c.Key)
	require.Zero(t, c.Records)
	require.InDelta(t, 2, metric(t, s, "events_total", "sent"), 0)
	require.InDelta(t, 2, metric(t, s, "events_total", "failed"), 0)
}

// An event not acknowledged when the run ends is sent at the next start,
// though the file is gone by then; a recovered file's says completed
// false. The Redis form pushes the same JSON onto a list.
func TestEventsResentAfterRestart(t *testing.T) {
	r := newRig(t)
	rdb := redistest.Private(t)
	warc := r.warcFile(t, "a.warc", 1)

	rdb.Freeze()
	n, err := NewNotifier("redis://" + rdb.Addr + "/0/warcs")
	require.NoError(t, err)
	r.opts.Notifier = n
	s := New(r.opts)
	s.Add(Unit{Path: warc, Kind: KindWARC, Recovered: true})
	s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	require.NoError(t, s.Run(ctx))
	cancel()
	_, err = os.Stat(warc)
	require.ErrorIs(t, err, os.ErrNotExist, "shipped and removed; only the event is owed")
	rdb.Thaw()

	r.ship(t, time.Minute) // a new run, nothing queued but the owed event
	client := redis.NewClient(&redis.Options{Addr: rdb.Addr})
	defer client.Close()
	got, err := client.LRange(context.Background(), "warcs", 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, got, 1)
	var e Event
	require.NoError(t, json.Unmarshal([]byte(got[0]), &e))
	require.Equal(t, "crawl/a.warc", e.Key)
	require.False(t, e.Completed)
	require.Equal(t, int64(1), e.Records)

	r.ship(t, time.Minute) // acknowledged: not sent again
	require.Equal(t, int64(1), client.LLen(context.Background(), "warcs").Val())
}

func TestNewNotifierRefusesBadURLs(t *testing.T) {
	for _, u := range []string{"ftp://x/y", "redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/zero/key", "http://", "::"} {
		_, err := NewNotifier(u)
		require.Error(t, err, u)
	}
}
