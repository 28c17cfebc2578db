package wacz

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"regexp"
	"strings"
	"time"
)

// zipPackage writes the entries of the WACZ's zip one after the other and
// keeps, for datapackage.json, the path, size and SHA-256 of each.
type zipPackage struct {
	zw        *zip.Writer
	modified  time.Time
	resources []resource
	names     map[string]bool
}

// resource is a file of the package as datapackage.json lists it.
type resource struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Hash  string `json:"hash"`
	Bytes int64  `json:"bytes"`
}

func newZipPackage(w io.Writer, modified time.Time) *zipPackage {
	return &zipPackage{zw: zip.NewWriter(w), modified: modified, names: map[string]bool{}}
}

// entry is the zip entry being written: it counts and hashes its bytes.
type entry struct {
	w    io.Writer
	sha  hash.Hash
	n    int64
	path string
}

func (e *entry) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	e.sha.Write(p[:n])
	e.n += int64(n)
	return n, err
}

// create starts the entry at path. method is zip.Store for what must be
// read by range (the WARCs, index.cdx.gz) or is compressed already, else
// zip.Deflate. Sizes and the CRC follow the data (a data descriptor), so
// nothing is read twice; archive/zip switches to zip64 by itself for an
// entry or an offset past 4 GiB.
func (z *zipPackage) create(path string, method uint16) (*entry, error) {
	fh := &zip.FileHeader{Name: path, Method: method, Modified: z.modified}
	fh.SetMode(0o644) // else unzip makes the files readable by their owner only
	w, err := z.zw.CreateHeader(fh)
	if err != nil {
		return nil, fmt.Errorf("adding %s to the zip: %w", path, err)
	}
	return &entry{w: w, sha: sha256.New(), path: path}, nil
}

// list records a finished entry for datapackage.json (every entry but
// the package's own metadata).
func (z *zipPackage) list(e *entry) {
	z.resources = append(z.resources, resource{
		Name:  z.resourceName(e.path),
		Path:  e.path,
		Hash:  "sha256:" + hex.EncodeToString(e.sha.Sum(nil)),
		Bytes: e.n,
	})
}

// notName is what a Frictionless resource name may not hold: it allows
// lower-case letters, digits and "-._/" only.
var notName = regexp.MustCompile(`[^-a-z0-9._/]+`)

// resourceName is the base name of path, made a valid Frictionless name
// (WARC names often hold capitals: WARCPROX-2024...) and unique in the
// package.
func (z *zipPackage) resourceName(path string) string {
	base := path[strings.LastIndexByte(path, '/')+1:]
	name := notName.ReplaceAllString(strings.ToLower(base), "-")
	for i, n := 2, name; ; i++ {
		if !z.names[n] {
			z.names[n] = true
			return n
		}
		n = fmt.Sprintf("%s-%d", name, i)
	}
}

// close writes the zip's central directory.
func (z *zipPackage) close() error {
	if err := z.zw.Close(); err != nil {
		return fmt.Errorf("finishing the zip: %w", err)
	}
	return nil
}

// copyFile adds the file f, from its start, as the entry path.
func (z *zipPackage) copyFile(path string, f *os.File) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("reading back %s: %w", path, err)
	}
	e, err := z.create(path, zip.Deflate)
	if err != nil {
		return err
	}
	if _, err := io.Copy(e, f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	z.list(e)
	return nil
}
