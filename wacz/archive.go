package wacz

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/warcproxy/warcproxy/cdxj"
)

// addWARC copies one WARC into archive/, indexing it as it passes: the
// walk reads the file, and every byte it reads goes on into the zip entry
// (and its hash).
func (z *zipPackage) addWARC(ctx context.Context, in input, v cdxj.Visitor) error {
	f, err := os.Open(in.path)
	if err != nil {
		return fmt.Errorf("opening %s: %w", in.path, err)
	}
	defer func() { _ = f.Close() }()
	e, err := z.create("archive/"+in.name, zip.Store) // read by range: never deflated
	if err != nil {
		return err
	}
	src := io.TeeReader(ctxReader{ctx, f}, e)
	if err := cdxj.Walk(src, in.name, v); err != nil {
		return fmt.Errorf("%s: %w", in.path, err)
	}
	// The walk ends at the end of the file; a file that grew meanwhile
	// was still being written.
	n, err := io.Copy(io.Discard, src)
	if err != nil {
		return fmt.Errorf("%s: %w", in.path, err)
	}
	if n > 0 || e.n != in.size {
		return fmt.Errorf("%s: the file changed while it was packed (%d bytes before, %d read)", in.path, in.size, e.n)
	}
	z.list(e)
	return nil
}

// ctxReader ends a read once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
