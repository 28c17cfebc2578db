package writer

import (
	"io"

	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// scanWARC is scanFile for a .warc.gz file (gz) or a .warc file.
func scanWARC(r io.Reader, gz bool) (end, records int64, stop, err error) {
	c := warcscan.None
	if gz {
		c = warcscan.Gzip
	}
	return scanFile(r, c)
}

// maxKeptLine is the grammar's limit on the header lines values are read
// from, which the reference reader of the fuzz tests applies too.
const maxKeptLine = warcscan.MaxKeptLine
