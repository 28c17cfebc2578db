package wacz

import (
	"archive/zip"
	"bufio"
	"bytes"
	"fmt"
	"strconv"

	"github.com/klauspost/compress/gzip"
)

// Paths of the index in the package.
const (
	indexCDXJ       = "indexes/index.cdxj"
	indexCDXGz      = "indexes/index.cdx.gz"
	indexIDX        = "indexes/index.idx"
	indexCDXGzName  = "index.cdx.gz" // as index.idx names it, relative to indexes/
	linesPerBlock   = 3000           // index lines per gzip member of index.cdx.gz
	idxFormatHeader = `!meta 0 {"format": "cdxj-gzip-1.0", "filename": "` + indexCDXGzName + `"}` + "\n"
)

// writeIndex writes the sorted lines as indexes/index.cdxj.
func (z *zipPackage) writeIndex(lines *lineSorter) error {
	e, err := z.create(indexCDXJ, zip.Deflate)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(e, 64<<10)
	err = lines.each(func(l []byte) error {
		_, err := bw.Write(l)
		return err
	})
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", indexCDXJ, err)
	}
	z.list(e)
	return nil
}

// writeCompressedIndex writes the sorted lines as the compressed index
// that ReplayWeb.page and pywb read for large collections (pywb's ZipNum
// form with a CDXJ secondary index): indexes/index.cdx.gz holds blocks of
// linesPerBlock lines, each its own gzip member, and indexes/index.idx one
// line per block, in order: the block's first "URLKEY TIMESTAMP", then
// {"offset", "length", "filename"} of the member in index.cdx.gz, after a
// "!meta" line naming the format. A reader binary-searches index.idx (a
// few lines per million captures, loaded whole), then fetches and gunzips
// only the blocks that can hold a URL.
func (z *zipPackage) writeCompressedIndex(lines *lineSorter) error {
	e, err := z.create(indexCDXGz, zip.Store) // members read by range
	if err != nil {
		return err
	}
	idx := []byte(idxFormatHeader)
	var (
		gz    *gzip.Writer
		n     int   // lines in the current block
		start int64 // where the current block starts in index.cdx.gz
	)
	endBlock := func() error {
		if err := gz.Close(); err != nil {
			return err
		}
		idx = appendIDXLine(idx, start, e.n-start)
		n = 0
		return nil
	}
	err = lines.each(func(l []byte) error {
		if n == 0 {
			start = e.n
			idx = append(idx, blockKey(l)...)
			if gz == nil {
				gz = gzip.NewWriter(e)
			} else {
				gz.Reset(e)
			}
		}
		if _, err := gz.Write(l); err != nil {
			return err
		}
		if n++; n == linesPerBlock {
			return endBlock()
		}
		return nil
	})
	if err == nil && n > 0 {
		err = endBlock()
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", indexCDXGz, err)
	}
	z.list(e)

	e, err = z.create(indexIDX, zip.Deflate)
	if err != nil {
		return err
	}
	if _, err := e.Write(idx); err != nil {
		return fmt.Errorf("writing %s: %w", indexIDX, err)
	}
	z.list(e)
	return nil
}

// blockKey is the "URLKEY TIMESTAMP" an index.idx line starts with: the
// first two fields of the block's first line.
func blockKey(line []byte) []byte {
	urlkey, rest, _ := bytes.Cut(line, []byte(" "))
	ts, _, _ := bytes.Cut(rest, []byte(" "))
	return fmt.Appendf(nil, "%s %s", urlkey, ts)
}

// appendIDXLine ends an index.idx line with the JSON of its block.
func appendIDXLine(idx []byte, offset, length int64) []byte {
	idx = append(idx, ` {"offset": `...)
	idx = strconv.AppendInt(idx, offset, 10)
	idx = append(idx, `, "length": `...)
	idx = strconv.AppendInt(idx, length, 10)
	idx = append(idx, `, "filename": "`+indexCDXGzName+`"}`+"\n"...)
	return idx
}
