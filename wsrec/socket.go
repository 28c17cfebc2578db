// Package wsrec records the messages of a WebSocket (RFC 6455) as the
// proxy relays its bytes: a frame reader per direction observes the
// stream without changing it, undoes the masking, joins fragmented
// messages and inflates permessage-deflate (RFC 7692) ones, and each
// message becomes a JSON line of a message log, spooled like bodies. The
// log is cut into records by size and time and handed to an Out (the
// capture stage), which writes it as a WARC resource record.
//
// The relay must never notice: what the reader cannot read ends the
// recording of that socket (logged, counted), never the socket.
package wsrec

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warcproxy/warcproxy/internal/spool"
)

// WARC-Truncated reasons of a record.
const (
	TruncLength      = "length"      // the record reached --websocket-record-size
	TruncTime        = "time"        // the record reached --websocket-record-time
	TruncDisconnect  = "disconnect"  // the socket ended without a closing handshake
	TruncUnspecified = "unspecified" // the frames could no longer be read
)

// Log is a record's message log being written: the capture stage's
// spooled, hashed recording (wire.Recorder).
type Log interface {
	io.Writer
	Len() int64
	Close()
}

// Out is where a socket's records go: the capture stage, which knows the
// handshake they belong to.
type Out interface {
	// NewLog starts the message log of a record.
	NewLog() Log
	// Flush writes the log as one record and owns it from then on.
	Flush(l Log, c Cut)
}

// Cut describes one record of a socket.
type Cut struct {
	Start     time.Time // WARC-Date: the socket's opening, or the cut's
	Truncated string    // a WARC-Truncated reason, or ""
	Messages  int64
}

// Direction is which way a byte stream goes.
type Direction int

const (
	Send Direction = iota // client to server
	Recv                  // server to client
)

// Options configure a Socket.
type Options struct {
	// Extensions are the 101's Sec-WebSocket-Extensions values.
	Extensions []string
	// Opened is when the handshake's response arrived: ts 0 of the lines
	// and WARC-Date of the first record.
	Opened time.Time
	// MaxRecordSize and MaxRecordTime cut the log into records
	// (--websocket-record-size, --websocket-record-time); 0: no cut.
	MaxRecordSize int64
	MaxRecordTime time.Duration
	Out           Out
	Spooler       *spool.Spooler // holds messages being joined
	Logger        *slog.Logger
	Metrics       *Metrics // may be nil
	URI           string   // for the log lines
}

// ErrExtension is an extension negotiated that the reader does not know.
var ErrExtension = errors.New("websocket extension not understood")

// Socket is the recording of one socket's messages.
type Socket struct {
	opts    Options
	stopped atomic.Bool // a direction failed: the socket is no longer read
	dirs    [2]direction

	mu       sync.Mutex
	log      Log
	start    time.Time
	messages int64
	records  int
	closes   [2]bool // a close frame went this way
	ended    bool
	enc      encoder
	timer    *time.Timer
	logLine  line
}

// direction is one way's reader and what it needs to read messages.
type direction struct {
	reader   frameReader
	inflater inflater
	plain    *assembly
}

// New starts the recording of a socket whose 101 accepted opts.Extensions.
// It fails (ErrExtension) when an extension other than permessage-deflate
// was negotiated: then nothing of the socket can be read.
func New(opts Options) (*Socket, error) {
	p, err := negotiated(opts.Extensions)
	if err != nil {
		opts.Metrics.failed("extension")
		return nil, errors.Join(ErrExtension, err)
	}
	s := &Socket{opts: opts, start: opts.Opened}
	for d := range s.dirs {
		dir := &s.dirs[d]
		dir.reader = frameReader{hdrNeed: 2, deflate: p.on, msg: message{body: newAssembly(opts.Spooler, opts.MaxRecordSize)}}
		dir.reader.message = func(m *message) error { return s.message(Direction(d), m) }
		dir.reader.control = func(op byte, masked bool, payload []byte) error {
			return s.control(Direction(d), op, masked, payload)
		}
		if p.on {
			dir.plain = newAssembly(opts.Spooler, opts.MaxRecordSize)
			dir.inflater.takeover = !p.clientNoContextTakeover
			if Direction(d) == Recv {
				dir.inflater.takeover = !p.serverNoContext
			}
		}
	}
	s.log = opts.Out.NewLog()
	if opts.MaxRecordTime > 0 {
		s.timer = time.AfterFunc(opts.MaxRecordTime, s.timeUp)
	}
	opts.Metrics.opened()
	return s, nil
}

// Observe reads the next bytes relayed in direction d; the relay calls it
// after it has passed them on. It does nothing once the recording stopped.
func (s *Socket) Observe(d Direction, p []byte) {
	if s.stopped.Load() {
		return
	}
	if _, err := s.dirs[d].reader.Write(p); err != nil {
		s.fail(d, err)
	}
}

// fail ends the recording: the record so far is written, marked
// unspecified, and the socket's bytes go on unread.
func (s *Socket) fail(d Direction, err error) {
	if s.stopped.Swap(true) {
		return
	}
	reason := "frame"
	switch {
	case errors.Is(err, errTooLong):
		reason = "too_long"
	case !errors.Is(err, errFrame):
		reason = "inflate"
	}
	s.opts.Metrics.failed(reason)
	s.logger().Info("websocket messages no longer recorded: cannot read the frames",
		"url", s.opts.URI, "direction", d.String(), "err", err)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finish(TruncUnspecified)
}

// End writes the last record once both directions have ended: complete
// when a close frame went each way, else marked disconnect.
func (s *Socket) End() {
	s.mu.Lock()
	defer s.mu.Unlock()
	trunc := TruncDisconnect
	if s.closes[Send] && s.closes[Recv] {
		trunc = ""
	}
	s.finish(trunc)
	for d := range s.dirs {
		s.dirs[d].reader.msg.body.close()
		if s.dirs[d].plain != nil {
			s.dirs[d].plain.close()
		}
	}
}

// finish writes the last record (s.mu held); later calls do nothing.
func (s *Socket) finish(trunc string) {
	if s.ended {
		return
	}
	s.ended = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.opts.Metrics.closed()
	s.flush(trunc)
}

// flush hands the log over as a record (s.mu held). The first record of
// a socket is written even without a message; a later one only with
// messages.
func (s *Socket) flush(trunc string) {
	if s.messages == 0 && s.records > 0 {
		s.log.Close()
		s.log = nil
		return
	}
	s.opts.Metrics.record(trunc)
	s.opts.Out.Flush(s.log, Cut{Start: s.start, Truncated: trunc, Messages: s.messages})
	s.log, s.records, s.messages = nil, s.records+1, 0
}

// cut writes the record so far and starts the next (s.mu held).
func (s *Socket) cut(trunc string, now time.Time) {
	s.flush(trunc)
	s.log = s.opts.Out.NewLog()
	s.start = now
	if s.timer != nil {
		s.timer.Reset(s.opts.MaxRecordTime)
	}
}

// timeUp cuts a record that reached --websocket-record-time while the
// socket is quiet (a busy one is cut by its next message).
func (s *Socket) timeUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if s.messages == 0 {
		s.timer.Reset(s.opts.MaxRecordTime)
		return
	}
	s.cut(TruncTime, time.Now())
}

// message logs a whole data message.
func (s *Socket) message(d Direction, m *message) error {
	dir := &s.dirs[d]
	body := m.body
	if m.compressed {
		dir.plain.reset()
		if err := dir.inflater.inflate(m.body.reader(), dir.plain); err != nil {
			return err
		}
		body = dir.plain
	}
	return s.write(d, m.opcode, m.masked, body.len(), body.reader(), 0, "")
}

// control logs a ping, pong or close frame.
func (s *Socket) control(d Direction, op byte, masked bool, payload []byte) error {
	code, reason := 0, ""
	if op == opClose {
		code, reason = closeDetails(payload)
		s.mu.Lock()
		s.closes[d] = true
		s.mu.Unlock()
	}
	return s.write(d, op, masked, int64(len(payload)), &sliceReader{b: payload}, code, reason)
}

// lineOverhead is about what a line takes besides its payload.
const lineOverhead = 96

// write appends a message's line to the log, cutting the record first
// when the line would take it past its size or time.
func (s *Socket) write(d Direction, op byte, masked bool, n int64, payload io.Reader, code int, reason string) error {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil
	}
	if s.messages == 0 && s.records > 0 {
		// A record after a cut starts with its first message: a quiet
		// stretch carries nothing to date.
		s.start = now
		if s.timer != nil {
			s.timer.Reset(s.opts.MaxRecordTime)
		}
	}
	if s.messages > 0 {
		switch est := lineOverhead + n*4/3; {
		case s.opts.MaxRecordSize > 0 && s.log.Len()+est > s.opts.MaxRecordSize:
			s.cut(TruncLength, now)
		case s.opts.MaxRecordTime > 0 && now.Sub(s.start) >= s.opts.MaxRecordTime:
			s.cut(TruncTime, now)
		}
	}
	s.logLine = line{ts: now.Sub(s.opts.Opened), send: d == Send, opcode: op, masked: masked,
		payload: payload, closeCode: code, closeReason: reason}
	if err := s.enc.write(s.log, &s.logLine); err != nil {
		return err
	}
	s.logLine.payload = nil
	s.messages++
	s.opts.Metrics.message(d, n)
	return nil
}

func (s *Socket) logger() *slog.Logger {
	if s.opts.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.opts.Logger
}

func (d Direction) String() string {
	if d == Send {
		return "send"
	}
	return "recv"
}
