package writer

import (
	"io"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"
)

// member is one gzip member being written.
type member interface {
	io.Writer
	Close() error
}

// gzipSet is a worker's gzip writers: one per level in use (at most the
// Huffman-only and configured ones), each created when first needed and
// reset for every record, the stored writer, and the parallel writer for
// huge blocks.
type gzipSet struct {
	level int // the configured level: a record never gets a stronger one
	probe *probe
	byLvl []levelWriter
	par   *parallelGzip // nil until a huge compressible block comes
	store storedGzip    // for blocks the probe finds incompressible
	count *memberCounts
}

// memberCounts counts gzip members by how they were compressed, indexed
// like memberKinds (the pool's metric).
type memberCounts [len(memberKinds)]atomic.Uint64

// memberKinds: a verdict's index, then the parallel writer.
var memberKinds = [...]string{"level", "huffman", "stored", "parallel"}

const parallelKind = len(memberKinds) - 1

type levelWriter struct {
	level int
	w     *gzip.Writer
}

func newGzipSet(level int, count *memberCounts) *gzipSet {
	g := &gzipSet{level: level, count: count}
	if strength(level) > strength(gzip.HuffmanOnly) {
		g.probe = newProbe()
	}
	return g
}

// write writes r as one gzip member on out, at the level r's sample calls
// for (capped at the configured level): body writes the member's content.
// A member that fails half-way is stopped before write returns, so nothing
// is written to out after that.
func (g *gzipSet) write(out io.Writer, r *Record, body func(io.Writer) error) error {
	m, kind, err := g.open(out, r)
	if err != nil {
		return err
	}
	if err := body(m); err != nil {
		g.abort()
		return err
	}
	if err := m.Close(); err != nil {
		g.abort()
		return err
	}
	g.count[kind].Add(1)
	return nil
}

// open starts r's member and says which of memberKinds it is.
func (g *gzipSet) open(out io.Writer, r *Record) (member, int, error) {
	v := fullDeflate
	if g.probe != nil {
		var err error
		if v, err = g.probe.judge(r); err != nil {
			return nil, 0, err
		}
	}
	if v == fullDeflate && r.BlockLength >= parallelMin && strength(g.level) >= strength(gzip.BestSpeed) {
		if g.par == nil {
			g.par = newParallelGzip(g.level)
		}
		g.par.Reset(out)
		return g.par, parallelKind, nil
	}
	level := g.levelFor(v)
	if level == gzip.NoCompression {
		g.store.Reset(out)
		return &g.store, int(v), nil
	}
	w := g.writer(level)
	w.Reset(out)
	return w, int(v), nil
}

// abort stops a member that failed half-way. Only the parallel writer has
// anything to stop: goroutines that would go on writing to the file.
func (g *gzipSet) abort() {
	if g.par != nil {
		g.par.stop()
	}
}

// levelFor is the level for a verdict: the cheap levels, unless the
// configured one is cheaper still.
func (g *gzipSet) levelFor(v verdict) int {
	l := g.level
	switch v {
	case huffmanOnly:
		l = gzip.HuffmanOnly
	case storedOnly:
		l = gzip.NoCompression
	}
	if strength(l) > strength(g.level) {
		return g.level
	}
	return l
}

func (g *gzipSet) writer(level int) *gzip.Writer {
	for _, lw := range g.byLvl {
		if lw.level == level {
			return lw.w
		}
	}
	w, _ := gzip.NewWriterLevel(io.Discard, level) // levels checked in New
	g.byLvl = append(g.byLvl, levelWriter{level, w})
	return w
}

// strength orders gzip levels by how hard they try: stored, Huffman-only,
// stateless, then 1 to 9 (the default is 5 in klauspost/compress).
func strength(level int) int {
	switch level {
	case gzip.NoCompression:
		return 0
	case gzip.HuffmanOnly:
		return 1
	case gzip.StatelessCompression:
		return 2
	case gzip.DefaultCompression:
		return 2 + 5
	}
	return 2 + level
}
