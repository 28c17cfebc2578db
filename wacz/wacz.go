// Package wacz packs WARC files into a WACZ (Web Archive Collection
// Zipped, version 1.1.1): one zip that ReplayWeb.page opens from a URL and
// reads by range requests, holding
//
//	archive/NAME.warc.gz        the WARCs, byte for byte, stored (not deflated)
//	indexes/index.cdxj          their CDXJ index, sorted (or, with
//	                            CompressedIndex, index.cdx.gz and index.idx)
//	pages/pages.jsonl           the HTML pages, the entry points of replay
//	datapackage.json            every file above with its size and SHA-256
//	datapackage-digest.json     the SHA-256 of datapackage.json
//
// Each WARC is read once: the bytes read are copied into the zip, hashed
// and indexed as they pass, so memory does not grow with the size of the
// WARCs. The index lines are sorted in bounded memory too (lineSorter).
package wacz

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/warcproxy/warcproxy/cdxj"
)

// Options say what Pack writes.
type Options struct {
	// Output is the path of the WACZ file; its name must end in .wacz.
	Output string
	// Force replaces an existing Output.
	Force bool
	// Title is datapackage.json's title; "" uses Output's base name
	// without .wacz.
	Title string
	// Pages says which records are listed as pages.
	Pages PagesFrom
	// CompressedIndex writes indexes/index.cdx.gz and index.idx instead of
	// index.cdxj, for collections whose index is too large to load whole.
	CompressedIndex bool
	// Software is datapackage.json's software, "warcproxy VERSION".
	Software string
	// Now is the creation time, time.Now if nil.
	Now func() time.Time
	// IndexMemory bounds the bytes of index lines held in memory for
	// sorting; more are sorted in runs in a temporary directory beside
	// Output. 0 means DefaultIndexMemory.
	IndexMemory int
}

// DefaultIndexMemory is Options.IndexMemory's default: about 60,000 index
// lines.
const DefaultIndexMemory = 16 << 20

// Summary is what a package holds.
type Summary struct {
	WARCs      int
	IndexLines int64
	Pages      int64
	Bytes      int64 // size of the WACZ file
}

// Pack writes the WARC files at paths into the WACZ at opts.Output.
//
// Problems with the arguments (see ArgError) are found before anything is
// written. The package is written to a temporary file in Output's
// directory and renamed to Output once complete, so a failure (an input
// whose records are not whole, a full disk, ctx canceled) leaves no
// partial file behind.
func Pack(ctx context.Context, paths []string, opts Options) (Summary, error) {
	if err := checkOutput(opts.Output, opts.Force); err != nil {
		return Summary{}, err
	}
	inputs, err := checkInputs(paths)
	if err != nil {
		return Summary{}, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.IndexMemory <= 0 {
		opts.IndexMemory = DefaultIndexMemory
	}
	if opts.Title == "" {
		opts.Title = strings.TrimSuffix(filepath.Base(opts.Output), ".wacz")
	}

	// Beside the output ("." for a bare name, not os.TempDir): the rename
	// stays on one file system, and the runs do not fill a tmpfs.
	dir, base := filepath.Dir(opts.Output), filepath.Base(opts.Output)
	work, err := os.MkdirTemp(dir, "."+base+".*.work")
	if err != nil {
		return Summary{}, fmt.Errorf("creating a work directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(work) }()
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return Summary{}, fmt.Errorf("creating the package file: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // a no-op once renamed

	p := &packer{opts: opts, work: work}
	sum, err := p.pack(ctx, tmp, inputs)
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing the package file: %w", cerr)
	}
	if err != nil {
		return Summary{}, err
	}
	// The output may have appeared while packing.
	if err := checkOutput(opts.Output, opts.Force); err != nil {
		return Summary{}, err
	}
	if err := os.Rename(tmp.Name(), opts.Output); err != nil {
		return Summary{}, fmt.Errorf("renaming the package file: %w", err)
	}
	return sum, nil
}

// packer writes one package.
type packer struct {
	opts Options
	work string // temporary directory for index runs and pages
}

func (p *packer) pack(ctx context.Context, out *os.File, inputs []input) (Summary, error) {
	bw := bufio.NewWriterSize(out, 1<<20)
	z := newZipPackage(bw, p.opts.Now())
	lines := newLineSorter(p.work, p.opts.IndexMemory)
	pagesFile, err := os.CreateTemp(p.work, "pages-*.jsonl")
	if err != nil {
		return Summary{}, fmt.Errorf("creating the pages file: %w", err)
	}
	defer func() { _ = pagesFile.Close() }()
	pagesBuf := bufio.NewWriterSize(pagesFile, 64<<10)
	if _, err := pagesBuf.WriteString(pagesHeader); err != nil {
		return Summary{}, fmt.Errorf("writing pages: %w", err)
	}
	pages := newPageFinder(pagesBuf)
	visitor := cdxj.Visitor{Line: lines.add}
	if p.opts.Pages == PagesFromHTML {
		visitor.Response = pages.visit
		visitor.Line = pages.line(lines.add)
	}

	for _, in := range inputs {
		pages.startFile()
		if err := z.addWARC(ctx, in, visitor); err != nil {
			return Summary{}, err
		}
	}
	if p.opts.CompressedIndex {
		err = z.writeCompressedIndex(lines)
	} else {
		err = z.writeIndex(lines)
	}
	if err != nil {
		return Summary{}, err
	}
	if err := pagesBuf.Flush(); err != nil {
		return Summary{}, fmt.Errorf("writing pages: %w", err)
	}
	if err := z.copyFile("pages/pages.jsonl", pagesFile); err != nil {
		return Summary{}, err
	}
	if err := z.writeDatapackage(p.opts.Title, p.opts.Software); err != nil {
		return Summary{}, err
	}
	if err := z.close(); err != nil {
		return Summary{}, err
	}
	if err := bw.Flush(); err != nil {
		return Summary{}, fmt.Errorf("writing the package file: %w", err)
	}
	if err := out.Chmod(0o644); err != nil {
		return Summary{}, fmt.Errorf("writing the package file: %w", err)
	}
	if err := out.Sync(); err != nil {
		return Summary{}, fmt.Errorf("writing the package file: %w", err)
	}
	size, err := out.Seek(0, io.SeekCurrent)
	if err != nil {
		return Summary{}, fmt.Errorf("writing the package file: %w", err)
	}
	return Summary{WARCs: len(inputs), IndexLines: lines.lines, Pages: pages.n, Bytes: size}, nil
}
