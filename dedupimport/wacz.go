package dedupimport

import (
	"archive/zip"
	"fmt"
	"path"
	"strings"
)

// importWACZ reads the WARCs a WACZ holds under archive/. Its index
// (indexes/index.cdxj or index.cdx.gz) would be quicker to read but has no
// record IDs, and so revisits of its captures would carry no
// WARC-Refers-To; nor could a digest of another algorithm be recomputed
// from it. A WACZ stores its WARCs uncompressed in the zip, so reading
// them costs what reading the WARC files would.
func (im *importer) importWACZ(p string) error {
	z, err := zip.OpenReader(p)
	if err != nil {
		return fmt.Errorf("reading the zip: %w", err)
	}
	defer func() { _ = z.Close() }()
	n := 0
	for _, f := range z.File {
		name := f.Name
		dir, base := path.Split(name)
		if dir != "archive/" || !isWARCName(base) {
			continue
		}
		n++
		if err := im.importMember(f); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if n == 0 {
		return fmt.Errorf("no WARC files under archive/: not a WACZ?")
	}
	return nil
}

func (im *importer) importMember(f *zip.File) error {
	r, err := f.Open()
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	return im.importWARC(r, path.Base(f.Name))
}

func isWARCName(name string) bool {
	for _, ext := range []string{".warc", ".warc.gz", ".warc.zst"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}
