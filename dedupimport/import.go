// Package dedupimport seeds a dedup index from captures already archived:
// WARC files (gzip, zstd or uncompressed), the WARCs inside WACZ files,
// and CDXJ indexes. Every response record with a payload digest becomes
// an entry (digest, bucket → record ID, URL, date) added through
// dedup.Store.Add, which never replaces an entry that is there; running an
// import twice therefore adds nothing the second time.
package dedupimport

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/digest"
)

// batchSize is how many entries go to the store in one Add: one bbolt
// transaction or one Redis pipeline.
const batchSize = 1000

// Options say what entries are made.
type Options struct {
	// Bucket is the dedup bucket the entries go to.
	Bucket string
	// Digest and Base32 are the proxy's --digest-algorithm and --base32:
	// the entries' digests are written in that form, and records with
	// digests of another algorithm are recomputed from their payload
	// (WARC) or skipped (CDXJ).
	Digest digest.Algorithm
	Base32 bool
	// Progress, if not nil, gets a line now and then ("\r"-rewritten),
	// for a terminal.
	Progress io.Writer
}

// Reasons a record is skipped, as the summary names them.
const (
	SkipRevisit      = "revisit (not an original)"
	SkipNotResponse  = "not a response (CDXJ line of a resource, metadata or request record)"
	SkipOtherDigest  = "digest of another algorithm, no payload to recompute it from (CDXJ)"
	SkipNoDigest     = "no payload digest (CDXJ)"
	SkipBadDigest    = "unreadable payload digest"
	SkipBadPayload   = "payload unreadable (bad chunked encoding), digest not recomputed"
	SkipNoURL        = "no target URI"
	SkipBadTimestamp = "timestamp not 14 digits (CDXJ)"
	SkipEmpty        = "empty payload (the proxy never deduplicates one)"
)

// Summary counts what an import did.
type Summary struct {
	// Files is how many files were read (the last one perhaps not to
	// its end).
	Files int
	// Read is every response and revisit record (and CDXJ line) read.
	Read int64
	// Added entries were new; Present ones were in the index already, or
	// earlier in this import (a payload captured at several URLs).
	Added, Present int64
	// Recomputed digests, of records whose digest was of another
	// algorithm (or missing).
	Recomputed int64
	Skipped    map[string]int64
}

// SkippedReasons lists the reasons in Skipped, in order.
func (s *Summary) SkippedReasons() []string {
	return slices.Sorted(maps.Keys(s.Skipped))
}

// importer holds an import's state: the store, the batch being built and
// the counts.
type importer struct {
	ctx   context.Context
	store dedup.Store
	opts  Options
	sum   Summary
	batch []dedup.Item

	start, lastShown time.Time
	files            int
}

// Import adds the captures in ins (checked by CheckInputs) to s. On error
// the entries of the batches written before it stay (and, unless ctx was
// canceled, those read before it in the file that failed); the summary
// counts them.
func Import(ctx context.Context, s dedup.Store, ins []Input, opts Options) (Summary, error) {
	im := &importer{ctx: ctx, store: s, opts: opts, sum: Summary{Skipped: map[string]int64{}}, start: time.Now(), files: len(ins)}
	defer im.done()
	for _, in := range ins {
		im.sum.Files++
		if err := im.importFile(in); err != nil {
			if ctx.Err() != nil {
				return im.sum, fmt.Errorf("%s: interrupted: %w", in.Path, err)
			}
			// What was read before the error is whole: keep it.
			if ferr := im.flush(); ferr != nil {
				return im.sum, ferr
			}
			return im.sum, fmt.Errorf("%s: %w", in.Path, err)
		}
	}
	return im.sum, im.flush()
}

func (im *importer) importFile(in Input) error {
	switch in.Kind {
	case WACZ:
		return im.importWACZ(in.Path)
	case CDXJ:
		return im.importCDXJ(in.Path)
	}
	return im.importWARCFile(in.Path)
}

// skip counts a record left out.
func (im *importer) skip(reason string) {
	im.sum.Skipped[reason]++
}

// add queues an entry, writing the batch when it is full.
func (im *importer) add(d string, e dedup.Entry) error {
	im.batch = append(im.batch, dedup.Item{Key: dedup.Key{Digest: d, Bucket: im.opts.Bucket}, Entry: e})
	if len(im.batch) < batchSize {
		return nil
	}
	return im.flush()
}

func (im *importer) flush() error {
	if len(im.batch) == 0 {
		return nil
	}
	added, err := im.store.Add(im.ctx, im.batch)
	if err != nil {
		return fmt.Errorf("writing to the index: %w", err)
	}
	for _, a := range added {
		if a {
			im.sum.Added++
		} else {
			im.sum.Present++
		}
	}
	im.batch = im.batch[:0]
	im.show()
	return nil
}

// read counts a record read and shows progress now and then.
func (im *importer) read() error {
	im.sum.Read++
	if im.sum.Read%256 == 0 {
		im.show()
		return im.ctx.Err()
	}
	return nil
}

// show writes the progress line, at most twice a second.
func (im *importer) show() {
	if im.opts.Progress == nil || time.Since(im.lastShown) < 500*time.Millisecond {
		return
	}
	im.lastShown = time.Now()
	rate := float64(im.sum.Read) / time.Since(im.start).Seconds()
	fmt.Fprintf(im.opts.Progress, "\rfile %d of %d, %d records read, %d added, %.0f records/s\x1b[K",
		im.sum.Files, im.files, im.sum.Read, im.sum.Added, rate)
}

// done ends the progress line.
func (im *importer) done() {
	if im.opts.Progress != nil && !im.lastShown.IsZero() {
		fmt.Fprint(im.opts.Progress, "\r\x1b[K")
	}
}

// isEmpty: sum is the digest of no bytes, which the proxy never looks up
// (it dedups only payloads larger than its minimum sizes, at least 1 byte).
func isEmpty(alg digest.Algorithm, sum []byte) bool {
	return bytes.Equal(sum, alg.New().Sum(nil))
}

// normal is a digest in the proxy's form (alg:BASE32 or alg:hex), or ok
// false when it is of another algorithm than the proxy's.
func (im *importer) normal(alg digest.Algorithm, sum []byte) (string, bool) {
	if alg != im.opts.Digest {
		return "", false
	}
	return alg.Format(sum, im.opts.Base32), true
}
