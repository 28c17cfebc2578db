package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"
)

// Outcome kinds of a soak exchange, as the client saw it.
const (
	OutWhole       = "whole"        // origin's head and the whole body
	OutClientAbort = "client-abort" // origin's head, then the client hung up mid-body
	OutOriginCut   = "origin-cut"   // origin's head, then the body broke off
	OutProxyError  = "proxy-error"  // the proxy's own answer (5xx, refused CONNECT): not recorded
	OutNoResponse  = "no-response"  // no status line at all: not recorded
	OutInterrupted = "interrupted"  // cut by warcbench's own end (a signal): a record or none, either way
)

// soakOutcomes are the kinds in report order.
var soakOutcomes = []string{OutWhole, OutClientAbort, OutOriginCut, OutProxyError, OutNoResponse, OutInterrupted}

// soakOutcome is what became of one request.
type soakOutcome struct {
	Kind     string // OutWhole, ...
	Attempts int    // times the client's transport sent it (it retries some failures on reused connections)
}

// soakPath is one kind of request of the mix.
type soakPath struct {
	weight int
	path   func(r *rand.Rand, stall time.Duration) string
	abort  bool // the client hangs up after the first 16 KB
}

// soakSizes are /bytes sizes weighted to small ones, 1 KB to 8 MB.
var soakSizes = []struct {
	size   string
	weight int
}{{"1KB", 30}, {"4KB", 22}, {"16KB", 18}, {"64KB", 12}, {"256KB", 9}, {"1MB", 6}, {"4MB", 2}, {"8MB", 1}}

func pickSize(r *rand.Rand) string {
	total := 0
	for _, s := range soakSizes {
		total += s.weight
	}
	n := r.IntN(total)
	for _, s := range soakSizes {
		if n -= s.weight; n < 0 {
			return s.size
		}
	}
	return soakSizes[0].size
}

func fixed(p string) func(*rand.Rand, time.Duration) string {
	return func(*rand.Rand, time.Duration) string { return p }
}

// soakMix is the traffic: mostly whole bodies, a few percent of each
// fault. Weights are per thousand.
var soakMix = []soakPath{
	{weight: 850, path: func(r *rand.Rand, _ time.Duration) string { return "/bytes/" + pickSize(r) }},
	{weight: 50, path: func(r *rand.Rand, _ time.Duration) string { return fmt.Sprintf("/stream/16KB/%d", 1+r.IntN(64)) }},
	{weight: 20, path: fixed("/status/404")},
	{weight: 30, path: fixed("/drip/16KB/40/50"), abort: true},
	{weight: 20, path: func(r *rand.Rand, _ time.Duration) string {
		return "/reset/" + []string{"64KB", "256KB", "1MB"}[r.IntN(3)]
	}},
	{weight: 10, path: func(_ *rand.Rand, d time.Duration) string { return fmt.Sprintf("/stall/16KB/%d", d.Milliseconds()) }},
	{weight: 5, path: func(_ *rand.Rand, d time.Duration) string { return fmt.Sprintf("/stall/0/%d", d.Milliseconds()) }},
	{weight: 8, path: fixed("/garbage/head")},
	{weight: 7, path: fixed("/garbage/chunk")},
}

func pickPath(r *rand.Rand) *soakPath {
	total := 0
	for i := range soakMix {
		total += soakMix[i].weight
	}
	n := r.IntN(total)
	for i := range soakMix {
		if n -= soakMix[i].weight; n < 0 {
			return &soakMix[i]
		}
	}
	return &soakMix[0]
}

// soakLoad is the client side of a soak: workers and what they saw.
type soakLoad struct {
	bases       [2]string          // http://origin, https://origin
	clients     [2][2]*http.Client // [keep-alive, new-conn][http, https]
	stall       time.Duration      // how long /stall paths stall
	next        atomic.Uint64      // request ids, from 1
	done        atomic.Int64       // exchanges finished (for URLs/s)
	bytes       atomic.Int64
	mu          sync.Mutex
	outcomes    map[uint64]soakOutcome
	modes, tlss [2]atomic.Int64 // requests by mode and by scheme
}

// run issues requests from concurrency workers until issueCtx ends; those
// in flight then finish (ctx cuts them).
func (l *soakLoad) run(ctx, issueCtx context.Context, concurrency int) {
	var wg sync.WaitGroup
	for w := range concurrency {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			buf := make([]byte, 64<<10)
			for issueCtx.Err() == nil {
				l.one(ctx, r, buf)
			}
		})
	}
	wg.Wait()
}

// one issues one request and notes its outcome.
func (l *soakLoad) one(ctx context.Context, r *rand.Rand, buf []byte) {
	id := l.next.Add(1)
	p := pickPath(r)
	mode, scheme := 0, 0
	if r.IntN(10) >= 7 {
		mode = 1 // 30% new connections
	}
	if r.IntN(10) >= 6 {
		scheme = 1 // 40% HTTPS
	}
	l.modes[mode].Add(1)
	l.tlss[scheme].Add(1)
	url := fmt.Sprintf("%s%s?soak=%d", l.bases[scheme], p.path(r, l.stall), id)
	var attempts atomic.Int32
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { attempts.Add(1) },
	})
	kind, n := soakFetch(tctx, l.clients[mode][scheme], url, p.abort, buf)
	l.bytes.Add(n)
	l.done.Add(1)
	l.mu.Lock()
	l.outcomes[id] = soakOutcome{Kind: kind, Attempts: int(attempts.Load())}
	l.mu.Unlock()
}

// soakFetch makes one request and classifies what the client saw.
func soakFetch(ctx context.Context, c *http.Client, url string, abort bool, buf []byte) (string, int64) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return OutNoResponse, 0
	}
	resp, err := c.Do(req)
	if err != nil && ctx.Err() != nil {
		return OutInterrupted, 0
	}
	if err != nil {
		var ce *connectError
		if errors.As(err, &ce) {
			return OutProxyError, 0
		}
		return OutNoResponse, 0
	}
	defer resp.Body.Close()
	if resp.Header.Get(OriginHeader) == "" {
		_, _ = io.Copy(io.Discard, resp.Body)
		return OutProxyError, 0
	}
	if abort {
		n, err := io.ReadFull(resp.Body, buf[:16<<10])
		switch {
		case err != nil && ctx.Err() != nil:
			return OutInterrupted, int64(n)
		case err != nil:
			return OutOriginCut, int64(n)
		}
		return OutClientAbort, int64(n) // Close on an unread body drops the connection
	}
	n, err := io.CopyBuffer(io.Discard, onlyReader{resp.Body}, buf)
	switch {
	case err == nil:
		return OutWhole, n
	case ctx.Err() != nil:
		return OutInterrupted, n
	default:
		return OutOriginCut, n
	}
}
