package capture_test

import (
	"context"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/capture"
	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/digest"
	"github.com/warcproxy/warcproxy/internal/spool"
	"github.com/warcproxy/warcproxy/stats"
	"github.com/warcproxy/warcproxy/warcproxmeta"
	"github.com/warcproxy/warcproxy/writer"
)

// rig is a stage wired to fakes: a writer queue, a dedup store and a
// crawl log, and the real stats tracker counting in memory.
type rig struct {
	stage *capture.Stage
	queue *fakeQueue
	dedup *fakeDedup
	log   *fakeCrawlLog
	stats *stats.Tracker
	reg   *prometheus.Registry
}

func newRig(t *testing.T, mutate func(*capture.Options)) *rig {
	t.Helper()
	sp, err := spool.New(t.TempDir(), 1<<20, 8<<20)
	require.NoError(t, err)
	tracker, err := stats.NewTracker(nil, stats.Options{}, nil, nil)
	require.NoError(t, err)
	r := &rig{queue: &fakeQueue{}, dedup: newFakeDedup(), log: &fakeCrawlLog{}, stats: tracker, reg: prometheus.NewPedanticRegistry()}
	opts := capture.Options{
		Spooler: sp, Queue: r.queue, Digest: digest.SHA1, Base32: true, WARCVersion: "1.0",
		Dedup: r.dedup, Stats: tracker, CrawlLog: r.log, Registerer: r.reg,
	}
	if mutate != nil {
		mutate(&opts)
	}
	r.stage, err = capture.New(opts, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	return r
}

const (
	testURI      = "http://example.com/page"
	testRequest  = "GET /page HTTP/1.1\r\nHost: example.com\r\n\r\n"
	testHead     = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 40\r\n\r\n"
	testBody     = "<html>a page of forty bytes dedup</html>"
	testResponse = testHead + testBody
)

// fetch plays the front end: it opens an exchange and records a request
// and response as the wire client would, with an interim 100 Continue
// before the final response (not part of the record).
func (r *rig) fetch(t *testing.T, mutate func(*capture.Exchange)) *capture.Exchange {
	t.Helper()
	ex := &capture.Exchange{Start: time.Now(), TargetURI: testURI, Method: "GET", Referer: "http://example.com/", Prefix: "crawl"}
	if mutate != nil {
		mutate(ex)
	}
	r.stage.Open(ex)
	if ex.Request != nil {
		_, _ = io.WriteString(ex.Request, testRequest)
		_, _ = io.WriteString(ex.Response, "HTTP/1.1 100 Continue\r\n\r\n"+testResponse)
	}
	ex.ResStart = int64(len("HTTP/1.1 100 Continue\r\n\r\n"))
	ex.HeadEnd = ex.ResStart + int64(len(testHead))
	ex.ResEnd = ex.HeadEnd + int64(len(testBody))
	ex.IP, ex.Status = "192.0.2.1", 200
	ex.ContentType, ex.HasContentType = "text/html", true
	ex.Payload.R = strings.NewReader(testBody)
	_, err := io.Copy(io.Discard, &ex.Payload)
	require.NoError(t, err)
	return ex
}

func sha1b32(s string) string {
	sum := sha1.Sum([]byte(s))
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}

func field(r writer.Record, name string) string {
	for _, f := range r.Fields {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

func bucket(t *testing.T, r *rig, name string) stats.Bucket {
	t.Helper()
	b, err := r.stats.Get(context.Background(), name)
	require.NoError(t, err)
	return b
}

func pending(r *rig) any { return r.stage.Status()["captures_pending"] }

// A new payload: response then request, digests over exactly the bytes
// of each block, the 1xx left out; once written, the payload is saved for
// dedup, the crawl log names the file, and the stats count it as new.
func TestSubmitWritesResponseAndRequest(t *testing.T) {
	r := newRig(t, nil)
	ex := r.fetch(t, nil)
	require.Equal(t, 1, pending(r))
	r.stage.Submit(ex)
	require.Equal(t, 1, r.queue.len())
	require.Equal(t, int64(1), bucket(t, r, "__all__").New.URLs, "counted when queued, before the write")
	require.Empty(t, r.dedup.saves, "not saved before it is on disk")
	require.Empty(t, r.log.all(), "no crawl log line before it is on disk")

	c := r.queue.write(nil)
	require.Len(t, c.Records, 2)
	res, req := c.Records[0], c.Records[1]
	require.Equal(t, "crawl", c.Prefix)
	require.Equal(t, "response", res.Type)
	require.Equal(t, testResponse, c.blocks[0])
	require.Equal(t, sha1b32(testResponse), res.BlockDigest)
	require.Equal(t, sha1b32(testBody), field(res, "WARC-Payload-Digest"))
	require.Equal(t, "192.0.2.1", field(res, "WARC-IP-Address"))
	require.Empty(t, field(res, "WARC-Truncated"))
	require.Equal(t, "request", req.Type)
	require.Equal(t, testRequest, c.blocks[1])
	require.Equal(t, sha1b32(testRequest), req.BlockDigest)
	require.Equal(t, res.ID, field(req, "WARC-Concurrent-To"))

	require.Equal(t, []string{sha1b32(testBody) + " __unspecified__ " + testURI}, r.dedup.saves)
	lines := r.log.all()
	require.Len(t, lines, 1)
	require.Equal(t, 200, lines[0].Status)
	require.Equal(t, "test-00000.warc.gz", lines[0].WARCFilename)
	require.Equal(t, int64(1234), lines[0].WARCOffset)
	require.Equal(t, sha1b32(testBody), lines[0].PayloadDigest)
	require.Equal(t, "text/html", lines[0].MIMEType)
	require.Equal(t, int64(len(testBody)), lines[0].ContentLength)
	require.Equal(t, 0, pending(r))
	require.Equal(t, 1.0, r.captures(t, "archived"))
}

// captures reads warcproxy_proxy_captures_total{result=...}.
func (r *rig) captures(t *testing.T, result string) float64 {
	t.Helper()
	mfs, err := r.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == "warcproxy_proxy_captures_total" && m.GetLabel()[0].GetValue() == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no captures_total{result=%q}", result)
	return 0
}

// The same payload again: a revisit whose block is the response head,
// pointing at the original, and no second save.
func TestSubmitRevisit(t *testing.T) {
	r := newRig(t, nil)
	r.stage.Submit(r.fetch(t, nil))
	original := r.queue.write(nil)

	r.stage.Submit(r.fetch(t, func(ex *capture.Exchange) { ex.Start = ex.Start.Add(time.Second) }))
	c := r.queue.write(nil)
	rev := c.Records[0]
	require.Equal(t, "revisit", rev.Type)
	require.Equal(t, testHead, c.blocks[0])
	require.Equal(t, sha1b32(testHead), rev.BlockDigest)
	require.Equal(t, "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest", field(rev, "WARC-Profile"))
	require.Equal(t, original.Records[0].ID, field(rev, "WARC-Refers-To"))
	require.Equal(t, testURI, field(rev, "WARC-Refers-To-Target-URI"))
	require.Equal(t, original.Records[0].Date.UTC().Format("2006-01-02T15:04:05Z"), field(rev, "WARC-Refers-To-Date"))
	require.Equal(t, sha1b32(testBody), field(rev, "WARC-Payload-Digest"))
	require.Len(t, r.dedup.saves, 1, "a revisit is not saved as an original")
	require.True(t, r.log.all()[1].Revisit)
	all := bucket(t, r, "__all__")
	require.Equal(t, int64(1), all.New.URLs)
	require.Equal(t, int64(1), all.Revisit.URLs)
	require.Equal(t, int64(2), all.Total.URLs)
}

// An original found through a CDX server has no record ID: the revisit
// names its URL and date only.
func TestRevisitOfCDXOriginalHasNoRefersTo(t *testing.T) {
	r := newRig(t, nil)
	r.dedup.entries[sha1b32(testBody)+" __unspecified__"] = dedup.Entry{URL: "http://example.com/elsewhere", Date: "2020-01-02T03:04:05Z"}
	r.stage.Submit(r.fetch(t, nil))
	rev := r.queue.write(nil).Records[0]
	require.Equal(t, "revisit", rev.Type)
	require.Empty(t, field(rev, "WARC-Refers-To"))
	require.Equal(t, "http://example.com/elsewhere", field(rev, "WARC-Refers-To-Target-URI"))
	require.Equal(t, "2020-01-02T03:04:05Z", field(rev, "WARC-Refers-To-Date"))
}

// What is fetched but not written: counted in stats total only, logged
// in the crawl log without a file, its recordings released.
func TestNotArchived(t *testing.T) {
	textOnly, err := warcproxmeta.Parse(`{"mime-type-filters":[{"type":"LIMIT","regex":"text/plain"}]}`)
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		opts   func(*capture.Options)
		mutate func(*capture.Exchange)
	}{
		{"warc-prefix -", nil, func(ex *capture.Exchange) { ex.Prefix = "-" }},
		{"method filter", func(o *capture.Options) { o.MethodFilter = []string{"get"} }, func(ex *capture.Exchange) { ex.Method = "POST" }},
		{"mime-type filter", nil, func(ex *capture.Exchange) { ex.Meta = textOnly }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.opts)
			r.stage.Submit(r.fetch(t, tc.mutate))
			require.Zero(t, r.queue.len())
			require.Zero(t, r.dedup.lookups)
			all := bucket(t, r, "__all__")
			require.Equal(t, int64(1), all.Total.URLs)
			require.Zero(t, all.New.URLs)
			lines := r.log.all()
			require.Len(t, lines, 1)
			require.Empty(t, lines[0].WARCFilename)
			require.Equal(t, sha1b32(testBody), lines[0].PayloadDigest, "the crawl log names the digest of what is not archived too")
			require.Equal(t, int64(1), r.stage.Status()["urls_not_archived"])
			require.Equal(t, 0, pending(r))
		})
	}
}

// Dedup is skipped for truncated and small payloads, and by
// --dedup-only-with-bucket for requests naming no bucket.
func TestDedupSkipped(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   func(*capture.Options)
		mutate func(*capture.Exchange)
	}{
		{"truncated", nil, func(ex *capture.Exchange) { ex.Truncated = capture.TruncLength }},
		{"text under the minimum", func(o *capture.Options) { o.DedupMinTextSize = 40 }, nil},
		{"only with a bucket", func(o *capture.Options) { o.DedupOnlyWithBucket = true }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.opts)
			r.stage.Submit(r.fetch(t, tc.mutate))
			c := r.queue.write(nil)
			require.Equal(t, "response", c.Records[0].Type)
			require.Zero(t, r.dedup.lookups)
			require.Empty(t, r.dedup.saves)
		})
	}
}

// A Warcprox-Meta dedup bucket marked ro is looked up but never saved to.
func TestDedupBuckets(t *testing.T) {
	meta, err := warcproxmeta.Parse(`{"dedup-buckets":{"ours":"rw","theirs":"ro"}}`)
	require.NoError(t, err)
	r := newRig(t, nil)
	r.stage.Submit(r.fetch(t, func(ex *capture.Exchange) { ex.Meta = meta }))
	r.queue.write(nil)
	require.Equal(t, []string{sha1b32(testBody) + " ours " + testURI}, r.dedup.saves)
}

// --blackout-period: a duplicate of the same URL soon after its original
// is not written at all.
func TestBlackoutPeriod(t *testing.T) {
	r := newRig(t, func(o *capture.Options) { o.BlackoutPeriod = time.Hour })
	r.stage.Submit(r.fetch(t, nil))
	r.queue.write(nil)
	r.stage.Submit(r.fetch(t, nil))
	require.Zero(t, r.queue.len(), "the duplicate is not written")
	require.Equal(t, int64(1), r.stage.Status()["urls_not_archived"])
}

// A failing dedup store never loses a capture: the full response is
// written, and the failure counted.
func TestDedupLookupFailureWritesFullResponse(t *testing.T) {
	r := newRig(t, nil)
	r.dedup.fail = errors.New("connection refused")
	r.stage.Submit(r.fetch(t, nil))
	require.Equal(t, "response", r.queue.write(nil).Records[0].Type)
	require.Equal(t, int64(1), r.stage.Status()["dedup_lookup_errors"])
}

// A capture the writer gives up on (forced shutdown) is not counted as
// written, not saved for dedup, not logged; a refused one is a failure.
func TestWriteFailures(t *testing.T) {
	r := newRig(t, nil)
	r.stage.Submit(r.fetch(t, nil))
	r.queue.write(writer.ErrClosed)
	require.Empty(t, r.dedup.saves)
	require.Empty(t, r.log.all())
	require.Zero(t, bucket(t, r, "__all__").Total.URLs, "the tally is cancelled")
	require.Equal(t, 0, pending(r))

	r.queue.refuse = writer.ErrClosed
	r.stage.Submit(r.fetch(t, nil))
	require.Equal(t, int64(1), r.stage.Status()["capture_errors"])
	require.Zero(t, bucket(t, r, "__all__").Total.URLs)
	require.Equal(t, 0, pending(r))
}

// An exchange that got no response: Abandon releases it (also after
// Submit, when it does nothing), and FetchFailed logs warcprox's negative
// status.
func TestAbandonAndFetchFailed(t *testing.T) {
	r := newRig(t, nil)
	ex := r.fetch(t, nil)
	r.stage.FetchFailed(ex, capture.FailDNS, errors.New("no such host"))
	r.stage.Abandon(ex)
	r.stage.Abandon(ex)
	require.Equal(t, 0, pending(r))
	require.Zero(t, r.queue.len())
	lines := r.log.all()
	require.Len(t, lines, 1)
	require.Equal(t, -6, lines[0].Status)
	require.Equal(t, "no such host", lines[0].Exception)

	ex = r.fetch(t, nil)
	r.stage.Submit(ex)
	r.stage.Abandon(ex) // after Submit: nothing
	require.Equal(t, 1, pending(r))
	r.queue.write(nil)
	require.Equal(t, 0, pending(r))
}

// Rerecord starts the recordings over for a retried request.
func TestRerecord(t *testing.T) {
	r := newRig(t, nil)
	ex := r.fetch(t, nil)
	first := ex.Response
	r.stage.Rerecord(ex)
	require.NotSame(t, first, ex.Response)
	require.Zero(t, ex.Response.Len())
}

// A chunked body whose framing broke is finished by the stage: the
// record ends after the last whole chunk, and the payload digest is over
// the data of the chunks kept, not over what the client was sent.
func TestSubmitRecutsBrokenFraming(t *testing.T) {
	const (
		head  = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		whole = head + "5\r\nhello\r\n6\r\n world\r\n"
	)
	for _, tt := range []struct {
		name   string
		broken bool
		block  string
		digest string
	}{
		{"broken framing", true, whole, sha1b32("hello world")},
		{"intact", false, whole + "zz\r\n", sha1b32("hello world!")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, nil)
			ex := &capture.Exchange{Start: time.Now(), TargetURI: testURI, Method: "GET", Prefix: "crawl"}
			r.stage.Open(ex)
			_, _ = io.WriteString(ex.Request, testRequest)
			_, _ = io.WriteString(ex.Response, whole+"zz\r\n")
			ex.HeadEnd, ex.ResEnd = int64(len(head)), ex.Response.Len()
			ex.Status, ex.Truncated, ex.BrokenFraming = 200, capture.TruncDisconnect, tt.broken
			ex.Payload.R = strings.NewReader("hello world!") // what the client was sent
			_, err := io.Copy(io.Discard, &ex.Payload)
			require.NoError(t, err)

			r.stage.Submit(ex)
			c := r.queue.write(nil)
			require.Equal(t, tt.block, c.blocks[0])
			require.Equal(t, tt.digest, field(c.Records[0], "WARC-Payload-Digest"))
			require.Equal(t, "disconnect", field(c.Records[0], "WARC-Truncated"))
		})
	}
}

// The front end asks the stage about a client's warc-prefix: the
// writer's rule answers, before anything is fetched.
func TestCheckPrefix(t *testing.T) {
	r := newRig(t, nil)
	for _, tt := range []struct {
		prefix string
		err    string
	}{
		{"job-1", ""},
		{".hidden", `invalid warc prefix ".hidden"`},
		{"a\tb", `invalid warc prefix "a\tb"`},
		{strings.Repeat("p", 201), "invalid warc prefix"},
	} {
		t.Run(tt.prefix[:min(len(tt.prefix), 10)], func(t *testing.T) {
			err := r.stage.CheckPrefix(tt.prefix)
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.err)
		})
	}
}

// Limits are checked against the counters the stage tallies.
func TestCheckLimits(t *testing.T) {
	meta, err := warcproxmeta.Parse(`{"stats":{"buckets":["job1"]},"limits":{"job1/total/urls":2}}`)
	require.NoError(t, err)
	r := newRig(t, nil)
	for range 2 {
		x, err := r.stage.CheckLimits(context.Background(), testURI, meta)
		require.NoError(t, err)
		require.Nil(t, x)
		r.stage.Submit(r.fetch(t, func(ex *capture.Exchange) { ex.Meta = meta }))
	}
	x, err := r.stage.CheckLimits(context.Background(), testURI, meta)
	require.NoError(t, err)
	require.NotNil(t, x)
	status, reason := x.Status()
	require.Equal(t, 420, status)
	require.Equal(t, "Reached limit", reason)
	require.JSONEq(t, `{"stats":{"job1":{"bucket":"job1","total":{"urls":2,"wire_bytes":`+strconv.Itoa(2*len(testResponse))+`},"new":{"urls":2,"wire_bytes":`+strconv.Itoa(2*len(testResponse))+`},"revisit":{"urls":0,"wire_bytes":0}}},"reached-limit":{"job1/total/urls":2}}`, x.Header())
}

// WARCPROX_WRITE_RECORD: the body is the block, with the payload digest
// warcprox writes for a block that is not an HTTP message.
func TestWriteRecord(t *testing.T) {
	r := newRig(t, nil)
	body := "a screenshot, more or less"
	rec := &capture.Record{Start: time.Now(), URI: "screenshot:" + testURI, Method: "WARCPROX_WRITE_RECORD",
		WARCType: "resource", ContentType: "image/png", Length: int64(len(body)), Prefix: "crawl"}
	require.NoError(t, r.stage.WriteRecord(rec, strings.NewReader(body)))
	c := r.queue.write(nil)
	require.Len(t, c.Records, 1)
	require.Equal(t, "resource", c.Records[0].Type)
	require.Equal(t, body, c.blocks[0])
	require.Equal(t, sha1b32(body), field(c.Records[0], "WARC-Payload-Digest"))
	require.Equal(t, 204, r.log.all()[0].Status)

	rec.Length++
	err := r.stage.WriteRecord(rec, strings.NewReader(body))
	require.ErrorIs(t, err, capture.ErrBody)
	require.Contains(t, err.Error(), "Content-Length says")

	r.queue.refuse = writer.ErrClosed
	rec.Length--
	require.ErrorIs(t, r.stage.WriteRecord(rec, strings.NewReader(body)), capture.ErrNotQueued)
	require.Equal(t, int64(2), r.stage.Status()["capture_errors"])
}

// The stage's metrics pass Prometheus' linter.
func TestMetricsLint(t *testing.T) {
	r := newRig(t, nil)
	problems, err := promtest.GatherAndLint(r.reg)
	require.NoError(t, err)
	require.Empty(t, problems)
}
