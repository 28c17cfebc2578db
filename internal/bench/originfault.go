package bench

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// OriginHeader is set on every response the origin's handlers write, so a
// client behind a proxy can tell them from the proxy's own error pages.
const OriginHeader = "X-Warcbench-Origin"

// maxStall bounds /stall: a proxy that never times out still gets its
// answer (the rest of the body) in the end.
const maxStall = 2 * time.Minute

// Faulty endpoints, for soak tests of a proxy:
//
//	/reset/N              Content-Length N, half the body, then a TCP reset
//	/stall/N/MS           Content-Length 2N, N bytes, MS ms of silence, then the rest
//	/garbage/head         bytes that are no HTTP response, then close
//	/garbage/chunk        a chunked 200 whose second chunk size line is junk
//	/drip/CHUNK/COUNT/MS  COUNT flushed writes of CHUNK bytes, MS ms apart
func (o *Origin) registerFaults() {
	o.mux.HandleFunc("GET /reset/{n}", o.serveReset)
	o.mux.HandleFunc("GET /stall/{n}/{ms}", o.serveStall)
	o.mux.HandleFunc("GET /garbage/{kind}", o.serveGarbage)
	o.mux.HandleFunc("GET /drip/{chunk}/{count}/{ms}", o.serveDrip)
}

// pathInt parses a path value as a non-negative size (16KB forms allowed).
func pathInt(r *http.Request, name string, limit int64) (int64, error) {
	n, err := ParseSize(r.PathValue(name))
	if err != nil || n > limit {
		return 0, fmt.Errorf("bad %s %q: 0 to %d", name, r.PathValue(name), limit)
	}
	return n, nil
}

func (o *Origin) serveReset(w http.ResponseWriter, r *http.Request) {
	n, err := pathInt(r, "n", 1<<30)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	w.WriteHeader(http.StatusOK)
	if writeBody(w, o.random, o.offset(o.random), n/2) != nil {
		return
	}
	conn, _, err := http.NewResponseController(w).Hijack() // flushes what was written
	if err != nil {
		return
	}
	if tc, ok := underlyingTCP(conn); ok {
		_ = tc.SetLinger(0) // close sends RST, not FIN
	}
	_ = conn.Close()
}

// underlyingTCP finds the TCP connection under conn (TLS or not).
func underlyingTCP(conn net.Conn) (*net.TCPConn, bool) {
	if tc, ok := conn.(interface{ NetConn() net.Conn }); ok {
		conn = tc.NetConn()
	}
	tc, ok := conn.(*net.TCPConn)
	return tc, ok
}

func (o *Origin) serveStall(w http.ResponseWriter, r *http.Request) {
	n, err1 := pathInt(r, "n", 1<<30)
	ms, err2 := pathInt(r, "ms", maxStall.Milliseconds())
	if err1 != nil || err2 != nil {
		http.Error(w, fmt.Sprint(err1, err2), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(2*n, 10))
	rc := http.NewResponseController(w)
	if n > 0 {
		// With N = 0 the stall comes before the head.
		w.WriteHeader(http.StatusOK)
		if writeBody(w, o.random, o.offset(o.random), n) != nil || rc.Flush() != nil {
			return
		}
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		return
	}
	_ = writeBody(w, o.random, o.offset(o.random), n)
}

func (o *Origin) serveGarbage(w http.ResponseWriter, r *http.Request) {
	switch r.PathValue("kind") {
	case "head":
		conn, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = bw.WriteString("\x16\x03\x01 this is no HTTP response \x00\xff\r\n\r\n")
		_ = bw.Flush()
	case "chunk":
		conn, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		writeGarbageChunked(bw, o.random[:1024])
	default:
		http.Error(w, "bad kind: head or chunk", http.StatusBadRequest)
	}
}

// writeGarbageChunked writes a chunked response with one good chunk and a
// bad chunk size line.
func writeGarbageChunked(bw *bufio.ReadWriter, chunk []byte) {
	fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n%s: 1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n", OriginHeader)
	fmt.Fprintf(bw, "%x\r\n", len(chunk))
	_, _ = bw.Write(chunk)
	_, _ = io.WriteString(bw, "\r\nzz-not-hex\r\ngarbage\r\n")
	_ = bw.Flush()
}

func (o *Origin) serveDrip(w http.ResponseWriter, r *http.Request) {
	chunk, err1 := pathInt(r, "chunk", bodyBufSize)
	count, err2 := pathInt(r, "count", 1<<20)
	ms, err3 := pathInt(r, "ms", maxDelay.Milliseconds())
	if err1 != nil || err2 != nil || err3 != nil || chunk == 0 {
		http.Error(w, fmt.Sprint("bad drip: ", err1, err2, err3), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(chunk*count, 10))
	rc := http.NewResponseController(w)
	t := time.NewTicker(time.Duration(max(ms, 1)) * time.Millisecond)
	defer t.Stop()
	for i := range count {
		if i > 0 {
			select {
			case <-t.C:
			case <-r.Context().Done():
				return
			}
		}
		if writeBody(w, o.random, o.offset(o.random), chunk) != nil || rc.Flush() != nil {
			return
		}
	}
}
