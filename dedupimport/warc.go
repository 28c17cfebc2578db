package dedupimport

import (
	"errors"
	"fmt"
	"io"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strings"

	"github.com/warcproxy/warcproxy/cdxj"
	"github.com/warcproxy/warcproxy/dedup"
)

func (im *importer) importWARCFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	return im.importWARC(f, filepath.Base(path))
}

// importWARC reads a WARC file with the CDXJ indexer's walk (the one WARC
// scanner: gzip, zstd or none, told by the first bytes), which hands over
// every response and revisit record that has an HTTP head.
func (im *importer) importWARC(r io.Reader, name string) error {
	return cdxj.Walk(r, name, cdxj.Visitor{
		Line:     func([]byte) error { return nil },
		Response: im.response,
	})
}

func (im *importer) response(r *cdxj.Response) error {
	if err := im.read(); err != nil {
		return err
	}
	switch {
	case r.Revisit:
		im.skip(SkipRevisit)
		return nil
	case r.TargetURI == "":
		im.skip(SkipNoURL)
		return nil
	}
	d, ok, err := im.recordDigest(r)
	if err != nil || !ok {
		return err
	}
	return im.add(d, dedup.Entry{ID: r.RecordID, URL: r.TargetURI, Date: r.Date})
}

// recordDigest is the record's payload digest in the proxy's form: its
// WARC-Payload-Digest when that is of the proxy's algorithm, else
// computed from the payload as the proxy computes it (over the body
// without its Transfer-Encoding, still in its Content-Encoding).
func (im *importer) recordDigest(r *cdxj.Response) (string, bool, error) {
	if r.PayloadDigest != "" {
		alg, sum, err := parseDigest(r.PayloadDigest)
		if err != nil {
			im.skip(SkipBadDigest)
			return "", false, nil
		}
		if d, ok := im.normal(alg, sum); ok {
			if isEmpty(alg, sum) {
				im.skip(SkipEmpty)
				return "", false, nil
			}
			return d, true, nil
		}
	}
	body := r.Body
	if isChunked(r.Header("Transfer-Encoding")) {
		body = httputil.NewChunkedReader(body)
	}
	h := im.opts.Digest.New()
	n, err := io.Copy(h, body)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "chunk") {
			im.skip(SkipBadPayload)
			return "", false, nil
		}
		return "", false, fmt.Errorf("reading the payload of %s: %w", r.RecordID, err)
	}
	if n == 0 {
		im.skip(SkipEmpty)
		return "", false, nil
	}
	im.sum.Recomputed++
	return im.opts.Digest.Format(h.Sum(nil), im.opts.Base32), true, nil
}

// isChunked: the last transfer coding is chunked (as the proxy reads it).
func isChunked(te string) bool {
	codings := strings.Split(te, ",")
	return strings.EqualFold(strings.TrimSpace(codings[len(codings)-1]), "chunked")
}
