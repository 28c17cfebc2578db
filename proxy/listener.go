package proxy

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warcproxy/warcproxy/internal/lograte"
)

// limitListener serves at most max connections at once. Connections over
// the limit are accepted from the kernel at once and wait in user space for a
// slot, up to wait; then they get a 503 and are closed. Waiting in user space
// (instead of in the listen backlog) lets the proxy count them and answer
// them, instead of leaving clients hanging in SYN queues.
type limitListener struct {
	net.Listener
	slots      chan struct{}
	wait       time.Duration
	maxWaiting int64
	ready      chan net.Conn
	done       chan struct{}
	once       sync.Once
	errMu      sync.Mutex
	err        error
	failed     chan struct{} // closed when the accept loop stops on an error
	extraMu    sync.Mutex
	extra      map[net.Listener]struct{} // jobs' ports (serveExtra)

	waiting atomic.Int64
	refused atomic.Int64
	wg      sync.WaitGroup

	logger     *slog.Logger
	refusedLog lograte.EverySecond
}

// noteRefused counts a refused connection and logs it.
func (l *limitListener) noteRefused(c net.Conn, reason string) {
	n := l.refused.Add(1)
	if l.refusedLog.Allow() {
		l.logger.Warn("refusing connections with 503: all --max-conns slots busy",
			"reason", reason, "max_conns", cap(l.slots), "waiting", l.waiting.Load(),
			"refused_total", n, "remote", c.RemoteAddr().String())
	}
}

func newLimitListener(l net.Listener, maxConns int, wait time.Duration, logger *slog.Logger) *limitListener {
	ll := &limitListener{
		Listener:   l,
		slots:      make(chan struct{}, maxConns),
		wait:       wait,
		maxWaiting: int64(max(4*maxConns, 1024)),
		ready:      make(chan net.Conn),
		done:       make(chan struct{}),
		failed:     make(chan struct{}),
		logger:     logger,
	}
	ll.wg.Add(1)
	go ll.acceptLoop()
	return ll
}

func (l *limitListener) acceptLoop() {
	defer l.wg.Done()
	if err := l.acceptFrom(l.Listener); err != nil {
		l.errMu.Lock()
		l.err = err
		l.errMu.Unlock()
		close(l.failed)
	}
}

// serveExtra takes connections from another listener (a job's port) into
// the same slots, until that listener is closed (or l is).
func (l *limitListener) serveExtra(ln net.Listener) {
	l.extraMu.Lock()
	defer l.extraMu.Unlock()
	select {
	case <-l.done:
		ln.Close()
		return
	default:
	}
	if l.extra == nil {
		l.extra = map[net.Listener]struct{}{}
	}
	l.extra[ln] = struct{}{}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		err := l.acceptFrom(ln)
		l.extraMu.Lock()
		delete(l.extra, ln)
		l.extraMu.Unlock()
		if err != nil && !errors.Is(err, net.ErrClosed) {
			l.logger.Error("a job's port stopped accepting connections", "address", ln.Addr().String(), "err", err)
		}
	}()
}

// acceptFrom accepts connections from ln until it fails for good or l is
// closed, each into a slot or to wait for one.
func (l *limitListener) acceptFrom(ln net.Listener) error {
	backoff := 5 * time.Millisecond
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporaryAcceptError(err) {
				// Out of file descriptors and the like: wait, don't spin.
				select {
				case <-time.After(backoff):
				case <-l.done:
					return nil
				}
				backoff = min(2*backoff, time.Second)
				continue
			}
			select {
			case <-l.done:
				return nil
			default:
				return err
			}
		}
		backoff = 5 * time.Millisecond
		select {
		case l.slots <- struct{}{}:
			l.deliver(c)
		default:
			l.wg.Add(1)
			if l.waiting.Load() >= l.maxWaiting {
				// Too many already wait: answer at once rather than hold
				// another goroutine and descriptor.
				l.noteRefused(c, "too many waiting")
				go func() { defer l.wg.Done(); refuse(c, 0, cap(l.slots)) }()
				continue
			}
			l.waiting.Add(1)
			go l.waitForSlot(c)
		}
	}
}

// deliver hands a connection holding a slot to Accept; at shutdown it
// closes it instead, which frees the slot.
func (l *limitListener) deliver(c net.Conn) {
	lc := &limitConn{Conn: c, l: l}
	select {
	case l.ready <- lc:
	case <-l.done:
		lc.Close()
	}
}

func (l *limitListener) waitForSlot(c net.Conn) {
	defer l.wg.Done()
	t := time.NewTimer(l.wait)
	defer t.Stop()
	select {
	case l.slots <- struct{}{}:
		l.waiting.Add(-1)
		l.deliver(c)
	case <-t.C:
		l.waiting.Add(-1)
		l.noteRefused(c, "waited --conn-wait-timeout")
		refuse(c, l.wait, cap(l.slots))
	case <-l.done:
		l.waiting.Add(-1)
		c.Close()
	}
}

// refuse answers a connection that waited too long with a 503 and closes it
// without a reset, so that the client reads the answer.
func refuse(c net.Conn, waited time.Duration, maxConns int) {
	body := fmt.Sprintf("warcproxy: too many connections: all %d slots (--max-conns) stayed busy for %s (--conn-wait-timeout)\n", maxConns, waited)
	if waited == 0 {
		body = fmt.Sprintf("warcproxy: too many connections: all %d slots (--max-conns) are busy and too many connections already wait for one\n", maxConns)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nRetry-After: 5\r\nConnection: close\r\n\r\n%s", len(body), body)
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 256<<10))
	}
	c.Close()
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-l.failed:
		l.errMu.Lock()
		defer l.errMu.Unlock()
		return nil, l.err
	}
}

func (l *limitListener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		err = l.Listener.Close()
		l.extraMu.Lock()
		for ln := range l.extra {
			ln.Close()
		}
		l.extraMu.Unlock()
	})
	return err
}

// active is the number of connections holding a slot.
func (l *limitListener) active() int { return len(l.slots) }

// limitConn frees its slot when closed.
type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.l.slots })
	return err
}

// CloseWrite lets refuse-like half closes reach the TCP connection.
func (c *limitConn) CloseWrite() error {
	if tc, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return tc.CloseWrite()
	}
	return nil
}

func isTemporaryAcceptError(err error) bool {
	var te interface{ Temporary() bool }
	return errors.As(err, &te) && te.Temporary()
}
