package writer

// output buffers writes to a File. Unlike bufio.Writer it can drop what it
// buffered and cut the file back, which is how a failed capture is undone,
// and it writes at explicit offsets so a cut file is written on at the cut.
type output struct {
	f   File
	off int64  // bytes handed to the OS; buf starts here in the file
	buf []byte // buffered bytes; cap(buf) is the buffer size
	err error  // sticky write error
}

func newOutput(f File, buf []byte) *output {
	return &output{f: f, buf: buf[:0]}
}

// Size is the logical file size: bytes handed to the OS plus bytes buffered.
func (o *output) Size() int64 { return o.off + int64(len(o.buf)) }

// Write buffers p, handing full buffers to the OS. A write as large as the
// buffer goes straight through when nothing is buffered.
func (o *output) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n := 0
	for len(p) > 0 {
		if len(o.buf) == 0 && len(p) >= cap(o.buf) {
			m, err := o.f.WriteAt(p, o.off)
			o.off += int64(m)
			n += m
			if err != nil {
				o.err = err
				return n, err
			}
			return n, nil
		}
		c := copy(o.buf[len(o.buf):cap(o.buf)], p)
		o.buf = o.buf[:len(o.buf)+c]
		p = p[c:]
		n += c
		if len(o.buf) == cap(o.buf) {
			if err := o.Flush(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// Flush hands the buffered bytes to the OS.
func (o *output) Flush() error {
	if o.err != nil {
		return o.err
	}
	if len(o.buf) == 0 {
		return nil
	}
	m, err := o.f.WriteAt(o.buf, o.off)
	o.off += int64(m)
	o.buf = o.buf[:copy(o.buf, o.buf[m:])]
	if err != nil {
		o.err = err
	}
	return err
}

// Cut discards everything after size, in the buffer and in the file, and
// clears a sticky write error: the next write goes to offset size.
func (o *output) Cut(size int64) error {
	if size >= o.off {
		// A failed write may have put bytes past off that it did not
		// count (os.File.WriteAt drops the count of a short write it
		// then fails to complete, as on ENOSPC): cut them off too.
		if o.err != nil {
			if err := o.f.Truncate(o.off); err != nil {
				return err
			}
		}
		o.buf = o.buf[:size-o.off]
		o.err = nil
		return nil
	}
	o.buf = o.buf[:0]
	if err := o.f.Truncate(size); err != nil {
		return err
	}
	o.off = size
	o.err = nil
	return nil
}
