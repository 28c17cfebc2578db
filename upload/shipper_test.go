package upload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// A WARC and its index go up under the prefix plus their path under
// --dir, byte for byte, with the file's SHA-256 as metadata; the local
// copies go once the store confirmed them, and a state says where.
func TestShipsAndRemoves(t *testing.T) {
	r := newRig(t)
	warc, warcBytes := r.file(t, "sub/a.warc.gz", 300<<10)
	idx, idxBytes := r.file(t, "sub/a.cdxj", 2<<10)
	s := r.ship(t, time.Minute, Unit{Path: warc, Kind: KindWARC, With: []Companion{{idx, KindCDXJ}}})

	require.Equal(t, warcBytes, r.object(t, "crawl/sub/a.warc.gz"))
	require.Equal(t, idxBytes, r.object(t, "crawl/sub/a.cdxj"))
	obj, err := r.store.Head(context.Background(), "crawl/sub/a.warc.gz")
	require.NoError(t, err)
	require.Equal(t, sum(warcBytes), obj.SHA256, "x-amz-meta-sha256")
	for _, p := range []string{warc, idx} {
		_, err := os.Stat(p)
		require.ErrorIs(t, err, os.ErrNotExist, "the local copy is removed once shipped")
	}
	states, err := Shipped(r.dir)
	require.NoError(t, err)
	require.Len(t, states, 2)
	for _, st := range states {
		require.True(t, strings.HasPrefix(st.URL, "s3://archive/crawl/sub/a."), st.URL)
	}
	require.InDelta(t, 1, metric(t, s, "files_total", KindWARC), 0)
	files, bytes := s.Backlog()
	require.Zero(t, files)
	require.Zero(t, bytes)
}

// A file larger than a part goes up in parts, read from the file, and is
// the same file in the bucket.
func TestShipsMultipart(t *testing.T) {
	r := newRig(t)
	warc, b := r.file(t, "big.warc.gz", 12<<20+12345)
	r.ship(t, 2*time.Minute, Unit{Path: warc, Kind: KindWARC})
	got := r.object(t, "crawl/big.warc.gz")
	require.Equal(t, len(b), len(got))
	require.True(t, bytes.Equal(b, got), "multipart object differs from the file")
	require.Empty(t, r.srv.Multipart(t, r.bucket))
}

// With --upload-keep-local the file stays, and a restart does not ship it
// again.
func TestKeepLocal(t *testing.T) {
	r := newRig(t)
	r.opts.KeepLocal = true
	warc, _ := r.file(t, "a.warc.gz", 1000)
	r.ship(t, time.Minute, Unit{Path: warc, Kind: KindWARC})
	_, err := os.Stat(warc)
	require.NoError(t, err)
	s := New(r.opts)
	pending, err := s.Pending()
	require.NoError(t, err)
	require.Empty(t, pending, "a kept file already shipped is not pending")
}

// An object already there with the same bytes counts as shipped (a crash
// after the upload, before the state was written); another object under
// the key is never overwritten: a conflict, the file kept.
func TestSameObjectAndConflict(t *testing.T) {
	r := newRig(t)
	same, sameBytes := r.file(t, "same.warc.gz", 5000)
	other, _ := r.file(t, "other.warc.gz", 5000)
	ctx := context.Background()
	for key, body := range map[string][]byte{"crawl/same.warc.gz": sameBytes, "crawl/other.warc.gz": []byte("not the file")} {
		_, err := r.store.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(r.bucket), Key: aws.String(key),
			Body: bytes.NewReader(body), Metadata: map[string]string{metaSHA256: sum(body)}})
		require.NoError(t, err)
	}
	s := r.ship(t, time.Minute, Unit{Path: same, Kind: KindWARC}, Unit{Path: other, Kind: KindWARC})
	_, err := os.Stat(same)
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Stat(other)
	require.NoError(t, err, "a file whose key holds another object is kept")
	require.Equal(t, []byte("not the file"), r.object(t, "crawl/other.warc.gz"), "never overwritten")
	require.InDelta(t, 1, metric(t, s, "failures_total", ReasonConflict), 0)
	require.Contains(t, r.logs.String(), "conflict")
}

// A file a writer still holds (its flock) is not shipped: with
// --no-warc-open-suffix, or a second process on the same --dir, the name
// does not say it is closed.
func TestLockedFileIsLeft(t *testing.T) {
	r := newRig(t)
	warc, _ := r.file(t, "busy.warc.gz", 1000)
	f, err := os.Open(warc)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	r.ship(t, time.Minute, Unit{Path: warc, Kind: KindWARC})
	_, err = os.Stat(warc)
	require.NoError(t, err)
	require.Empty(t, r.srv.List(t, r.bucket, ""))
}

// A store that stops answering (SIGSTOP) stalls an upload; it is retried
// once the store answers again, and one killed and restarted on the same
// port and folder is the same: nothing is lost, the file goes once.
func TestStoreOutage(t *testing.T) {
	r := newRig(t)
	warc, b := r.file(t, "a.warc.gz", 3<<20)
	require.NoError(t, r.srv.Freeze())
	time.AfterFunc(8*time.Second, func() { _ = r.srv.Thaw() })
	s := r.ship(t, time.Minute, Unit{Path: warc, Kind: KindWARC})
	require.Equal(t, b, r.object(t, "crawl/a.warc.gz"))
	require.Positive(t, metric(t, s, "failures_total", ReasonTimeout), "the stall is counted as a timeout")

	warc2, b2 := r.file(t, "b.warc.gz", 1<<20)
	r.srv.Kill()
	time.AfterFunc(2*time.Second, func() { require.NoError(t, r.srv.Restart()) })
	r.ship(t, time.Minute, Unit{Path: warc2, Kind: KindWARC})
	require.Equal(t, b2, r.object(t, "crawl/b.warc.gz"))
}

// At start, the multipart uploads a crash left under the prefix for a
// file still to ship are aborted, as are stale ones; another live
// uploader's recent upload is left alone.
func TestAbortsLeftovers(t *testing.T) {
	r := newRig(t)
	warc, b := r.file(t, "a.warc.gz", 1000)
	ctx := context.Background()
	for _, key := range []string{"crawl/a.warc.gz", "crawl/someone-elses.warc.gz"} {
		_, err := r.store.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(r.bucket), Key: aws.String(key)})
		require.NoError(t, err)
	}
	s := r.ship(t, time.Minute, Unit{Path: warc, Kind: KindWARC})
	require.Equal(t, []string{"crawl/someone-elses.warc.gz"}, r.srv.Multipart(t, r.bucket))
	require.Equal(t, b, r.object(t, "crawl/a.warc.gz"))
	require.InDelta(t, 1, metric(t, s, "aborted_multipart_uploads_total"), 0)

	r.opts.StaleUploads = time.Nanosecond // now every upload under the prefix is stale
	r.ship(t, time.Minute)
	require.Empty(t, r.srv.Multipart(t, r.bucket))
}

// Shutdown: when the budget ends with files still to ship, Run returns
// without error, and the files stay on disk for the next start.
func TestCutShutdownKeepsFiles(t *testing.T) {
	r := newRig(t)
	require.NoError(t, r.srv.Freeze())
	defer func() { _ = r.srv.Thaw() }()
	warc, _ := r.file(t, "a.warc.gz", 1000)
	s := New(r.opts)
	s.Add(Unit{Path: warc, Kind: KindWARC})
	s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	require.NoError(t, s.Run(ctx))
	_, err := os.Stat(warc)
	require.NoError(t, err)
	require.Contains(t, r.logs.String(), "files left to ship at the next start")
	require.Contains(t, r.logs.String(), "files=1 bytes=1000", "the file cut in flight is counted")
	pending, err := New(r.opts).Pending()
	require.NoError(t, err)
	require.Equal(t, []string{warc}, pending)
}

// Check at start: credentials the store refuses, and a bucket it does not
// have, are refusals; a store that is not there is not.
func TestCheck(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	require.NoError(t, r.store.Check(ctx, "crawl/"))
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	wrong := r.newStore(t, r.srv.Endpoint)
	require.ErrorIs(t, wrong.Check(ctx, "crawl/"), ErrRefused)
	t.Setenv("AWS_SECRET_ACCESS_KEY", r.srv.Secret)
	nobucket, err := NewS3(ctx, S3Options{Bucket: "no-such-bucket", Endpoint: r.srv.Endpoint})
	require.NoError(t, err)
	err = nobucket.Check(ctx, "")
	require.ErrorIs(t, err, ErrRefused)
	down := r.newStore(t, "http://127.0.0.1:1")
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err = down.Check(cctx, "")
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrRefused), "a store that is down is not a refusal: %v", err)
}

// The metrics pass the linter, named as the house style has them.
func TestMetricsLint(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	s := New(Options{Dir: t.TempDir(), Target: Target{Bucket: "b"}, Store: nil})
	require.NoError(t, reg.Register(s.Collector()))
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)
}
