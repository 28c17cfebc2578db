package wsrec

import (
	"fmt"
	"io"

	"github.com/warcproxy/warcproxy/internal/spool"
)

// inMemory is how much of a message is held in memory before the rest
// goes to a spool buffer (under --spool-memory, then on disk): a socket
// holds at most four such pieces (a direction's message as sent and
// inflated), so its memory stays bounded whatever its messages' size.
const inMemory = 64 << 10

// assembly holds one message's payload while it is joined.
type assembly struct {
	spooler *spool.Spooler
	mem     []byte
	spill   *spool.Buffer
	max     int64 // 0: no limit
}

func newAssembly(s *spool.Spooler, maxLen int64) *assembly {
	return &assembly{spooler: s, max: maxLen}
}

// errTooLong ends the recording of a socket whose message is longer than
// a record may be.
var errTooLong = fmt.Errorf("message longer than --websocket-record-size")

func (a *assembly) write(p []byte) error {
	if a.max > 0 && a.len()+int64(len(p)) > a.max {
		return errTooLong
	}
	if a.spill == nil {
		if room := inMemory - len(a.mem); len(p) <= room || a.spooler == nil {
			a.mem = append(a.mem, p...)
			return nil
		}
		a.spill = a.spooler.NewBuffer()
	}
	if _, err := a.spill.Write(p); err != nil {
		return fmt.Errorf("spooling a message: %w", err)
	}
	return nil
}

func (a *assembly) len() int64 {
	n := int64(len(a.mem))
	if a.spill != nil {
		n += a.spill.Len()
	}
	return n
}

// reader reads the whole payload from its start.
func (a *assembly) reader() io.Reader {
	if a.spill == nil {
		return &sliceReader{b: a.mem}
	}
	return io.MultiReader(&sliceReader{b: a.mem}, io.NewSectionReader(a.spill, 0, a.spill.Len()))
}

func (a *assembly) reset() {
	a.mem = a.mem[:0]
	if cap(a.mem) > inMemory {
		a.mem = nil
	}
	a.close()
}

func (a *assembly) close() {
	if a.spill != nil {
		a.spill.Close()
		a.spill = nil
	}
}

// sliceReader is bytes.Reader without its allocation per message.
type sliceReader struct{ b []byte }

func (s *sliceReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}
