package wacz

import (
	"bufio"
	"bytes"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// lineSorter sorts lines in byte order (LC_ALL=C sort, as pywb and
// ReplayWeb.page binary-search an index) in bounded memory: lines gather
// in one buffer; each time it holds limit bytes they are sorted and
// written to a run file in dir, and the runs are merged at the end. A
// collection of any size is indexed with at most limit bytes of lines in
// memory (and 16 bytes per line of bookkeeping).
type lineSorter struct {
	dir   string
	limit int

	buf   []byte
	spans []span // the lines in buf
	runs  []string
	lines int64
}

// span is one line in lineSorter.buf.
type span struct{ off, len int }

// minGrow is the first size of the line buffer.
const minGrow = 64 << 10

func newLineSorter(dir string, limit int) *lineSorter {
	return &lineSorter{dir: dir, limit: limit}
}

// add takes one line, "\n" included; the sorter copies it.
func (s *lineSorter) add(line []byte) error {
	if len(s.buf)+len(line) > s.limit && len(s.buf) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	if need := len(s.buf) + len(line); need > cap(s.buf) {
		// Grow by doubling up to the limit, and no further: the buffer is
		// the sorter's whole memory.
		newCap := max(min(2*cap(s.buf), s.limit), minGrow, need)
		s.buf = append(make([]byte, 0, newCap), s.buf...)
	}
	s.spans = append(s.spans, span{len(s.buf), len(line)})
	s.buf = append(s.buf, line...)
	s.lines++
	return nil
}

func (s *lineSorter) line(sp span) []byte { return s.buf[sp.off : sp.off+sp.len] }

// sortBuffered sorts the lines in the buffer.
func (s *lineSorter) sortBuffered() {
	slices.SortFunc(s.spans, func(a, b span) int { return bytes.Compare(s.line(a), s.line(b)) })
}

// spill writes the buffered lines, sorted, to a new run file.
func (s *lineSorter) spill() error {
	s.sortBuffered()
	f, err := os.CreateTemp(s.dir, "index-run-*")
	if err != nil {
		return fmt.Errorf("creating index run file: %w", err)
	}
	s.runs = append(s.runs, f.Name())
	bw := bufio.NewWriterSize(f, 256<<10)
	for _, sp := range s.spans {
		if _, err := bw.Write(s.line(sp)); err != nil {
			_ = f.Close()
			return fmt.Errorf("writing index run file: %w", err)
		}
	}
	err = bw.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing index run file: %w", err)
	}
	s.buf, s.spans = s.buf[:0], s.spans[:0]
	return nil
}

// each calls fn with every line, in order. A line is valid only during
// the call. The sorter is spent afterwards; its run files stay in dir for
// the caller to remove.
func (s *lineSorter) each(fn func(line []byte) error) error {
	if len(s.runs) == 0 {
		s.sortBuffered()
		for _, sp := range s.spans {
			if err := fn(s.line(sp)); err != nil {
				return err
			}
		}
		return nil
	}
	if len(s.spans) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.buf, s.spans = nil, nil // the merge needs only the runs' read buffers
	// Runs are merged maxFanIn at a time, so that memory (a read buffer per
	// run) and open files stay bounded however many runs there are.
	for len(s.runs) > maxFanIn {
		merged, err := s.mergeToRun(s.runs[:maxFanIn])
		if err != nil {
			return err
		}
		s.runs = append(s.runs[maxFanIn:], merged)
	}
	return mergeRuns(s.runs, fn)
}

// maxFanIn is how many runs are merged at once.
const maxFanIn = 64

// mergeToRun merges runs into a new run file, removes them and returns
// the new one's path.
func (s *lineSorter) mergeToRun(runs []string) (string, error) {
	f, err := os.CreateTemp(s.dir, "index-run-*")
	if err != nil {
		return "", fmt.Errorf("creating index run file: %w", err)
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	err = mergeRuns(runs, func(line []byte) error {
		_, err := bw.Write(line)
		return err
	})
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("merging index run files: %w", err)
	}
	for _, r := range runs {
		_ = os.Remove(r)
	}
	return f.Name(), nil
}

// run is one sorted run file being merged, at its current line.
type run struct {
	f    *os.File
	br   *bufio.Reader
	line []byte
}

// next reads the run's next line into r.line; io.EOF at the end.
func (r *run) next() error {
	r.line = r.line[:0]
	for {
		frag, err := r.br.ReadSlice('\n')
		r.line = append(r.line, frag...)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(r.line) > 0:
			return errors.New("index run file ends inside a line")
		default:
			return err
		}
	}
}

// runHeap orders runs by their current line.
type runHeap []*run

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return bytes.Compare(h[i].line, h[j].line) < 0 }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*run)) }
func (h *runHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}

// mergeRuns merges sorted run files into one sorted sequence of lines.
func mergeRuns(paths []string, fn func(line []byte) error) error {
	h := make(runHeap, 0, len(paths))
	defer func() {
		for _, r := range h {
			_ = r.f.Close()
		}
	}()
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("reading index run file: %w", err)
		}
		r := &run{f: f, br: bufio.NewReaderSize(f, 64<<10)}
		if err := r.next(); err != nil {
			_ = f.Close()
			if errors.Is(err, io.EOF) {
				continue
			}
			return fmt.Errorf("reading index run file: %w", err)
		}
		h = append(h, r)
	}
	heap.Init(&h)
	for len(h) > 0 {
		r := h[0]
		if err := fn(r.line); err != nil {
			return err
		}
		switch err := r.next(); {
		case err == nil:
			heap.Fix(&h, 0)
		case errors.Is(err, io.EOF):
			_ = r.f.Close()
			heap.Pop(&h)
		default:
			return fmt.Errorf("reading index run file: %w", err)
		}
	}
	return nil
}
