package upload

import (
	"context"
	"errors"
	"os"
	"time"
)

// Store is the object store the shipper writes to. S3 is the real one;
// tests may put faults in front of it.
type Store interface {
	// Head returns the size and the x-amz-meta-sha256 of the object at
	// key, or ErrNotFound. Without the permission to list the bucket a
	// missing key answers 403, which Head also reports as ErrNotFound.
	Head(ctx context.Context, key string) (Object, error)
	// Put uploads size bytes of f (from offset 0) to key with sums.SHA256
	// as its x-amz-meta-sha256, in parts when it is large.
	Put(ctx context.Context, key string, f *os.File, size int64, sums Sums) error
	// Uploads lists the multipart uploads begun under prefix and not
	// completed or aborted.
	Uploads(ctx context.Context, prefix string) ([]Upload, error)
	// Abort aborts one multipart upload.
	Abort(ctx context.Context, u Upload) error
}

// Sums are what the shipper took of a file in its one read before the
// upload: the SHA-256 (hex) that the object carries, and the CRC32 (IEEE)
// the store checks a whole-file PUT against, so that the SDK need not read
// the file again to compute them.
type Sums struct {
	SHA256 string
	CRC32  uint32
}

// Object is what Head tells of an object.
type Object struct {
	Size   int64
	SHA256 string // hex, "" when the object has no such metadata
}

// Upload is a multipart upload in progress (or left by a crash).
type Upload struct {
	Key, ID   string
	Initiated time.Time
}

// ErrNotFound is returned by Head for a key with no object.
var ErrNotFound = errors.New("no such object")

// ErrRefused wraps the store's answer when it refuses the credentials,
// the bucket does not exist, or the permissions are missing: a
// configuration error at start, not an outage to wait out.
var ErrRefused = errors.New("refused by the store")
