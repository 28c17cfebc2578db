package capture_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/warcproxy/warcproxy/crawllog"
	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/writer"
)

// fakeQueue is the writer: it keeps what is enqueued, and "writes" a
// capture when the test says so (write), as the pool would: File and
// Offset set, record IDs assigned, then Done.
type fakeQueue struct {
	mu     sync.Mutex
	queued []*writer.Capture
	refuse error // Enqueue returns it when set
}

func (q *fakeQueue) Enqueue(_ context.Context, c *writer.Capture) error {
	if q.refuse != nil {
		return q.refuse
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queued = append(q.queued, c)
	return nil
}

// written is a capture as the fake writer wrote it: the blocks are read
// before Done, which releases the spools.
type written struct {
	*writer.Capture
	blocks []string
}

// write finishes the oldest queued capture with err (nil: on disk).
func (q *fakeQueue) write(err error) written {
	q.mu.Lock()
	c := q.queued[0]
	q.queued = q.queued[1:]
	q.mu.Unlock()
	w := written{Capture: c}
	for _, r := range c.Records {
		b := make([]byte, r.BlockLength)
		if _, rerr := r.Block.ReadAt(b, r.BlockOffset); rerr != nil && !errors.Is(rerr, io.EOF) {
			panic(rerr)
		}
		w.blocks = append(w.blocks, string(b))
	}
	if err == nil {
		c.File, c.Offset = "/warcs/test-00000.warc.gz", 1234
		for i := range c.Records {
			if c.Records[i].ID == "" {
				c.Records[i].ID = fmt.Sprintf("<urn:uuid:written-%d>", i)
			}
		}
	}
	c.Done(err)
	return w
}

func (q *fakeQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queued)
}

// fakeDedup is a dedup store in a map, keyed by digest and bucket.
type fakeDedup struct {
	mu      sync.Mutex
	entries map[string]dedup.Entry
	saves   []string // "digest bucket url"
	lookups int
	fail    error
}

func newFakeDedup() *fakeDedup { return &fakeDedup{entries: map[string]dedup.Entry{}} }

func (d *fakeDedup) LookupURI(_ context.Context, digest, _ string, buckets []string) (*dedup.Entry, string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lookups++
	if d.fail != nil {
		return nil, "", d.fail
	}
	for _, b := range buckets {
		if e, ok := d.entries[digest+" "+b]; ok {
			return &e, b, nil
		}
	}
	return nil, "", nil
}

func (d *fakeDedup) Save(digest string, buckets []string, e dedup.Entry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, b := range buckets {
		d.entries[digest+" "+b] = e
		d.saves = append(d.saves, digest+" "+b+" "+e.URL)
	}
}

// fakeCrawlLog keeps the lines.
type fakeCrawlLog struct {
	mu      sync.Mutex
	entries []crawllog.Entry
	fail    bool
}

func (l *fakeCrawlLog) Log(e crawllog.Entry) error {
	if l.fail {
		return errors.New("disk full")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
	return nil
}

func (l *fakeCrawlLog) all() []crawllog.Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]crawllog.Entry(nil), l.entries...)
}
