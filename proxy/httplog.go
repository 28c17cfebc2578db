package proxy

import (
	"bytes"
	"log"
	"log/slog"
	"strings"
)

// httpErrorLog is the net/http servers' ErrorLog: their lines go to the
// log at debug, except an HTTP/2 connection a client's frames broke (a
// header list over --max-header-bytes ends the whole connection in Go's
// HTTP/2 server, with a COMPRESSION_ERROR or PROTOCOL_ERROR GOAWAY, rather
// than a 431 on the stream): that is a refused client request, counted and
// logged as net/http's HTTP/1 refusals are (servedConn.Write).
func (s *Server) httpErrorLog() *log.Logger {
	return log.New(httpLogWriter{s: s, debug: s.logger.With("from", "net/http")}, "", 0)
}

type httpLogWriter struct {
	s     *Server
	debug *slog.Logger
}

// h2ConnError starts the line net/http's HTTP/2 server writes when it ends
// a connection over the client's frames.
const h2ConnError = "http2: server connection error from "

func (w httpLogWriter) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	if rest, ok := strings.CutPrefix(line, h2ConnError); ok {
		remote, reason, _ := strings.Cut(rest, ": ")
		w.s.noteClientError(remote, "ended an HTTP/2 connection over the client's frames", "reason", reason)
		return len(p), nil
	}
	w.debug.Debug(line)
	return len(p), nil
}
