package upload

import (
	"context"
	"errors"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// errStalled ends an upload attempt whose body has not moved for the
// stall timeout: a store that was stopped (SIGSTOP, a frozen VM) keeps
// its TCP connections open, and nothing else would end the wait.
var errStalled = errors.New("upload stalled: no progress")

// watchProgress returns a context that ends with errStalled once the
// body has not been read for timeout, and the body to send: f from its
// start, size bytes, counting every read as progress. The SDK reads the
// body through io.ReadSeeker, the multipart uploader through io.ReaderAt.
func watchProgress(ctx context.Context, f *os.File, size int64, timeout time.Duration) (context.Context, *progressBody, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	b := &progressBody{sr: io.NewSectionReader(f, 0, size)}
	b.touch()
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(timeout / 4)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if time.Since(time.Unix(0, b.last.Load())) > timeout {
					cancel(errStalled)
					return
				}
			}
		}
	}()
	return ctx, b, func() { close(done); cancel(nil) }
}

// progressBody is a file's section that notes when it was last read.
type progressBody struct {
	sr   *io.SectionReader
	last atomic.Int64 // unix nanoseconds
}

func (b *progressBody) touch() { b.last.Store(time.Now().UnixNano()) }

func (b *progressBody) Read(p []byte) (int, error) {
	n, err := b.sr.Read(p)
	b.touch()
	return n, err
}

func (b *progressBody) ReadAt(p []byte, off int64) (int, error) {
	n, err := b.sr.ReadAt(p, off)
	b.touch()
	return n, err
}

func (b *progressBody) Seek(offset int64, whence int) (int64, error) {
	b.touch()
	return b.sr.Seek(offset, whence)
}
