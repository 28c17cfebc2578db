package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
	"golang.org/x/sync/errgroup"
)

// bodyBufSize is the size of each precomputed body buffer; longer bodies
// repeat it.
const bodyBufSize = 4 << 20

// Limits of the origin's endpoints, so a typo can't make it hang or
// exhaust memory.
const (
	maxDelay       = time.Minute
	maxGzipCached  = 64 << 20  // largest gzip body kept in the cache
	gzipCacheLimit = 512 << 20 // all cached gzip bodies together
)

// Origin is an HTTP handler serving synthetic bodies for load tests:
//
//	/bytes/N            N bytes with Content-Length (N may be 16KB, 4MB, ...)
//	/stream/CHUNK/COUNT COUNT writes of CHUNK bytes, each flushed (chunked)
//	/delay/MS           a short body after MS milliseconds
//	/status/CODE        that status with a short body
//	/reset, /stall, /garbage, /drip: faults (see registerFaults)
//
// Query parameters: text=1 gives text-like bodies (about 4:1 under gzip)
// instead of incompressible random bytes; gzip=1 sends the body gzip
// encoded (Content-Encoding: gzip; N and CHUNK count decoded bytes).
//
// Bodies are slices of buffers computed once, so serving costs no random
// numbers and no body allocation; gzip bodies of /bytes are compressed once
// per size and kept (up to a limit).
type Origin struct {
	random, text []byte
	next         atomic.Uint64 // varies where in the buffer a body starts
	mux          *http.ServeMux

	gzMu     sync.Mutex
	gzCache  map[gzKey][]byte
	gzCached int64
	gzPool   sync.Pool
}

type gzKey struct {
	n    int64
	text bool
}

var _ http.Handler = (*Origin)(nil)

// NewOrigin computes the body buffers (a fixed seed: runs are comparable).
func NewOrigin() *Origin {
	o := &Origin{
		random:  make([]byte, bodyBufSize),
		text:    makeText(bodyBufSize),
		gzCache: make(map[gzKey][]byte),
	}
	r := rand.NewChaCha8([32]byte{'w', 'a', 'r', 'c', 'b', 'e', 'n', 'c', 'h'})
	_, _ = r.Read(o.random)
	o.gzPool.New = func() any {
		w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
		return w
	}
	o.mux = http.NewServeMux()
	o.mux.HandleFunc("GET /bytes/{n}", o.serveBytes)
	o.mux.HandleFunc("GET /stream/{chunk}/{count}", o.serveStream)
	o.mux.HandleFunc("GET /delay/{ms}", o.serveDelay)
	o.mux.HandleFunc("GET /status/{code}", o.serveStatus)
	o.mux.HandleFunc("GET /{$}", o.serveIndex)
	o.registerFaults()
	return o
}

// makeText fills n bytes with words drawn from a small vocabulary with a
// skewed distribution, which gzip compresses roughly 4:1, like HTML.
func makeText(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	vocab := make([][]byte, 512)
	const letters = "etaoinshrdlucmfwypvbgkjqxz"
	for i := range vocab {
		w := make([]byte, 2+r.IntN(9))
		for j := range w {
			w[j] = letters[min(r.IntN(len(letters)), r.IntN(len(letters)))]
		}
		vocab[i] = w
	}
	b := make([]byte, 0, n+16)
	for len(b) < n {
		// A uniform variable to the fourth power favours the first words, as in prose.
		f := r.Float64()
		b = append(b, vocab[int(f*f*f*f*float64(len(vocab)))]...)
		if r.IntN(12) == 0 {
			b = append(b, ".\n"...)
		} else {
			b = append(b, ' ')
		}
	}
	return b[:n]
}

func (o *Origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(OriginHeader, "1")
	o.mux.ServeHTTP(w, r)
}

func (o *Origin) source(r *http.Request) ([]byte, bool) {
	if queryFlag(r.URL.RawQuery, "text") {
		return o.text, true
	}
	return o.random, false
}

func wantGzip(r *http.Request) bool { return queryFlag(r.URL.RawQuery, "gzip") }

// queryFlag tells whether the raw query holds name=1, without building the
// map url.Query would.
func queryFlag(raw, name string) bool {
	for raw != "" {
		var part string
		part, raw, _ = strings.Cut(raw, "&")
		if k, v, _ := strings.Cut(part, "="); k == name && v == "1" {
			return true
		}
	}
	return false
}

// writeBody writes n bytes of src to w, starting at off and wrapping around.
func writeBody(w io.Writer, src []byte, off int, n int64) error {
	for n > 0 {
		p := src[off:]
		if int64(len(p)) > n {
			p = p[:n]
		}
		if _, err := w.Write(p); err != nil {
			return err
		}
		n -= int64(len(p))
		off = 0
	}
	return nil
}

func (o *Origin) offset(src []byte) int {
	// A prime step, so consecutive bodies of one size differ.
	return int(o.next.Add(1) * 65537 % uint64(len(src)))
}

func (o *Origin) serveBytes(w http.ResponseWriter, r *http.Request) {
	n, err := ParseSize(r.PathValue("n"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	src, text := o.source(r)
	h := w.Header()
	if text {
		h.Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		h.Set("Content-Type", "application/octet-stream")
	}
	if wantGzip(r) {
		h.Set("Content-Encoding", "gzip")
		if body := o.gzipped(src, text, n); body != nil {
			h.Set("Content-Length", strconv.Itoa(len(body)))
			if r.Method != http.MethodHead {
				_, _ = w.Write(body)
			}
			return
		}
		// Too large to keep: compressed while sent, chunked.
		if r.Method == http.MethodHead {
			return
		}
		gz := o.gzPool.Get().(*gzip.Writer)
		defer o.gzPool.Put(gz)
		gz.Reset(w)
		if writeBody(gz, src, o.offset(src), n) == nil {
			_ = gz.Close()
		}
		return
	}
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	if r.Method != http.MethodHead {
		_ = writeBody(w, src, o.offset(src), n)
	}
}

// gzipped returns the gzip encoding of the first n bytes of src (wrapping),
// compressed at the default level once and cached, or nil if n is too large
// to keep.
func (o *Origin) gzipped(src []byte, text bool, n int64) []byte {
	k := gzKey{n, text}
	o.gzMu.Lock()
	body, ok := o.gzCache[k]
	o.gzMu.Unlock()
	if ok {
		return body
	}
	if n > maxGzipCached {
		return nil
	}
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	_ = writeBody(gz, src, 0, n)
	_ = gz.Close()
	body = buf.Bytes()
	o.gzMu.Lock()
	defer o.gzMu.Unlock()
	if prev, ok := o.gzCache[k]; ok {
		return prev
	}
	if o.gzCached+int64(len(body)) <= gzipCacheLimit {
		o.gzCache[k] = body
		o.gzCached += int64(len(body))
	}
	return body
}

func (o *Origin) serveStream(w http.ResponseWriter, r *http.Request) {
	chunk, err := ParseSize(r.PathValue("chunk"))
	if err != nil || chunk == 0 || chunk > bodyBufSize {
		http.Error(w, fmt.Sprintf("bad chunk size %q: 1 byte to 4MB", r.PathValue("chunk")), http.StatusBadRequest)
		return
	}
	count, err := strconv.ParseInt(r.PathValue("count"), 10, 64)
	if err != nil || count < 0 {
		http.Error(w, fmt.Sprintf("bad count %q", r.PathValue("count")), http.StatusBadRequest)
		return
	}
	src, text := o.source(r)
	if text {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/octet-stream")
	}
	gzipOn := wantGzip(r)
	if gzipOn {
		w.Header().Set("Content-Encoding", "gzip")
	}
	if r.Method == http.MethodHead {
		return
	}
	rc := http.NewResponseController(w)
	var out io.Writer = w
	var gz *gzip.Writer
	if gzipOn {
		gz = o.gzPool.Get().(*gzip.Writer)
		defer o.gzPool.Put(gz)
		gz.Reset(w)
		out = gz
	}
	off := o.offset(src)
	for range count {
		if err := writeBody(out, src, off, chunk); err != nil {
			return
		}
		off = int((int64(off) + chunk) % int64(len(src)))
		if gz != nil {
			if gz.Flush() != nil {
				return
			}
		}
		if rc.Flush() != nil {
			return
		}
	}
	if gz != nil {
		_ = gz.Close()
	}
}

func (o *Origin) serveDelay(w http.ResponseWriter, r *http.Request) {
	ms, err := strconv.ParseInt(r.PathValue("ms"), 10, 64)
	d := time.Duration(ms) * time.Millisecond
	if err != nil || ms < 0 || d > maxDelay {
		http.Error(w, fmt.Sprintf("bad delay %q: 0 to 60000 ms", r.PathValue("ms")), http.StatusBadRequest)
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", "3")
	if r.Method != http.MethodHead {
		_, _ = io.WriteString(w, "ok\n")
	}
}

func (o *Origin) serveStatus(w http.ResponseWriter, r *http.Request) {
	code, err := strconv.Atoi(r.PathValue("code"))
	if err != nil || code < 200 || code > 599 {
		http.Error(w, fmt.Sprintf("bad status %q: 200 to 599", r.PathValue("code")), http.StatusBadRequest)
		return
	}
	body := strconv.Itoa(code) + " " + http.StatusText(code) + "\n"
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if code == http.StatusNoContent || code == http.StatusNotModified {
		w.WriteHeader(code)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = io.WriteString(w, body)
	}
}

func (o *Origin) serveIndex(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "warcbench origin: /bytes/N /stream/CHUNK/COUNT /delay/MS /status/CODE; ?text=1 ?gzip=1\n")
}

// OriginServer runs an Origin on a plain and optionally a TLS listener.
type OriginServer struct {
	HTTP, HTTPS net.Listener // HTTPS is nil without a TLS port
	Cert        tls.Certificate
	origin      *Origin
	http2       bool
	logger      *slog.Logger
}

// OriginConfig says where an origin listens and what it speaks.
type OriginConfig struct {
	Address string
	Port    int // HTTP port; 0 picks a free one
	TLSPort int // HTTPS port; 0 picks a free one, -1 means no HTTPS
	// HTTP2 offers h2 by ALPN on the HTTPS port (net/http's own HTTP/2
	// server); without it the origin speaks HTTP/1.1 only, like the
	// proxy's upstream leg.
	HTTP2 bool
}

// ListenOrigin opens the listeners: cfg.Port for HTTP and, if cfg.TLSPort
// is not negative, cfg.TLSPort for HTTPS with a fresh self-signed
// certificate.
func ListenOrigin(cfg OriginConfig, logger *slog.Logger) (*OriginServer, error) {
	s := &OriginServer{origin: NewOrigin(), http2: cfg.HTTP2, logger: logger}
	var err error
	s.HTTP, err = net.Listen("tcp", net.JoinHostPort(cfg.Address, strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, fmt.Errorf("listening for http: %w", err)
	}
	if cfg.TLSPort >= 0 {
		s.Cert, err = SelfSignedCert(cfg.Address, "localhost", "127.0.0.1", "::1")
		if err != nil {
			_ = s.HTTP.Close()
			return nil, fmt.Errorf("making the origin certificate: %w", err)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Address, strconv.Itoa(cfg.TLSPort)))
		if err != nil {
			_ = s.HTTP.Close()
			return nil, fmt.Errorf("listening for https: %w", err)
		}
		protos := []string{"http/1.1"}
		if cfg.HTTP2 {
			protos = []string{"h2", "http/1.1"}
		}
		s.HTTPS = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{s.Cert}, NextProtos: protos})
	}
	return s, nil
}

// URLs returns the base URLs served.
func (s *OriginServer) URLs() []string {
	urls := []string{"http://" + s.HTTP.Addr().String()}
	if s.HTTPS != nil {
		urls = append(urls, "https://"+s.HTTPS.Addr().String())
	}
	return urls
}

// Serve serves until ctx ends, then shuts down (in-flight requests get a
// few seconds).
func (s *OriginServer) Serve(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, ln := range []net.Listener{s.HTTP, s.HTTPS} {
		if ln == nil {
			continue
		}
		srv := &http.Server{
			Handler:           s.origin,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       2 * time.Minute,
			ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelDebug),
		}
		if !s.http2 {
			srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
		}
		g.Go(func() error {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("serving %s: %w", ln.Addr(), err)
			}
			return nil
		})
		g.Go(func() error {
			<-gctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				_ = srv.Close()
			}
			return nil
		})
	}
	return g.Wait()
}
