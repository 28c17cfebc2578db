package capture

import (
	"context"
	"strings"

	"github.com/warcproxy/warcproxy/wire"
	"github.com/warcproxy/warcproxy/writer"
	"github.com/warcproxy/warcproxy/wsrec"
)

// wsContentType is the message log's media type, as browsertrix-crawler
// writes it: JSON lines in the shape of DevTools' WebSocketFrame.
const wsContentType = `application/jsonl; format="cdp"`

// WebSocket is where the message records of one socket go: resource
// records beside its handshake, through the writer queue like any capture.
// They are not deduplicated and not counted in stats buckets (the
// handshake is), and get no crawl log line.
type WebSocket struct {
	s            *Stage
	uri          string // ws:// or wss://
	prefix       string
	concurrentTo string // the handshake's response record
}

var _ wsrec.Out = (*WebSocket)(nil)

// OpenWebSocket is where the messages of the socket that the submitted
// handshake ex opened are recorded; nil when the handshake was not
// archived (its messages are not either).
func (s *Stage) OpenWebSocket(ex *Exchange) *WebSocket {
	if !ex.archive || ex.responseID == "" {
		return nil
	}
	return &WebSocket{s: s, uri: wsURI(ex.TargetURI), prefix: ex.Prefix, concurrentTo: ex.responseID}
}

// URI is the socket's ws:// or wss:// URL.
func (w *WebSocket) URI() string { return w.uri }

// wsURI is the socket's URL: the handshake's with ws or wss for its
// scheme.
func wsURI(uri string) string {
	switch {
	case strings.HasPrefix(uri, "http://"):
		return "ws://" + uri[len("http://"):]
	case strings.HasPrefix(uri, "https://"):
		return "wss://" + uri[len("https://"):]
	}
	return uri
}

// NewLog starts a record's message log: spooled under --spool-memory and
// hashed as it is written, like a recording.
func (w *WebSocket) NewLog() wsrec.Log {
	return wire.NewRecorder(w.s.opts.Spooler, w.s.opts.Digest, w.s.opts.HashLanes)
}

// Flush queues the log as a resource record; it waits for room in the
// queue (back-pressure on the socket's relay, as on any capture).
func (w *WebSocket) Flush(l wsrec.Log, c wsrec.Cut) {
	s, rec := w.s, l.(*wire.Recorder)
	if err := rec.Err(); err != nil {
		rec.Close()
		s.count(failed)
		s.logger.Error("websocket messages not archived: spooling them failed", "url", w.uri, "err", err)
		return
	}
	d := rec.Digest(s.opts.Digest, s.opts.Base32)
	fields := []writer.Field{
		{Name: "WARC-Concurrent-To", Value: w.concurrentTo},
		{Name: "WARC-Resource-Type", Value: "websocket"},
		{Name: "WARC-Payload-Digest", Value: d},
	}
	if c.Truncated != "" {
		fields = append(fields, writer.Field{Name: "WARC-Truncated", Value: c.Truncated})
	}
	wc := &writer.Capture{
		Prefix: w.prefix,
		Records: []writer.Record{{
			Type: "resource", Date: c.Start, TargetURI: w.uri, ContentType: wsContentType,
			Fields: fields, Block: rec.Buffer(), BlockLength: rec.Len(), BlockDigest: d,
		}},
		Done: func(error) { rec.Close() },
	}
	if err := s.opts.Queue.Enqueue(context.Background(), wc); err != nil {
		rec.Close()
		s.count(failed)
		s.logger.Error("websocket messages not archived: writer queue refused them", "url", w.uri, "messages", c.Messages, "err", err)
	}
}
