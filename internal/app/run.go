package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/oklog/run"
)

// Run serves until stop is closed (the first SIGINT or SIGTERM) or a
// component fails, then shuts down within --shutdown-timeout: the proxy
// stops accepting and lets exchanges in flight finish for three quarters
// of the budget, then cuts what is left (what those exchanges read is
// still written, marked truncated); the writer drains its queue and
// closes every file, the CDXJ indexer indexes them, the shipper ships
// them (what the budget leaves stays on disk for the next start), dedup
// and stats flush, and the metrics listener closes last, so a scrape can watch the
// drain. At the end of the budget, or at once when force is closed (a
// second signal), every component stops hard: writers finish the record
// in hand, so files hold whole records only, and what was not done is
// counted and logged, each with what ended it (the shutdown's causes,
// below). Run returns an error when anything failed, was cut short or was
// lost: the command then exits 1. A second signal that comes when nothing
// is left to cut loses nothing, and Run returns nil.
func (a *App) Run(stop, force <-chan struct{}) error {
	sd := newShutdown(a.cfg.ShutdownTimeout, force)
	defer sd.cancel() // ends the budget's clock and watcher once all is done
	var g run.Group
	var errs errList
	proxyDone, writerDone, indexerDone, backendsDone := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})

	quit := make(chan struct{})
	g.Add(func() error {
		select {
		case <-stop:
			a.logger.Info("shutting down: finishing in-flight exchanges", "shutdown_timeout", a.cfg.ShutdownTimeout)
		case <-quit:
		}
		return nil
	}, func(error) { close(quit) })
	g.Add(func() error { return a.runProxy(proxyDone) }, func(error) {
		go func() {
			defer close(proxyDone)
			errs.add("proxy", a.proxy.Shutdown(sd.begin().soft, sd.hard))
		}()
	})
	g.Add(func() error {
		defer close(writerDone)
		<-proxyDone
		errs.add("writer", a.closeWriter(sd))
		if a.indexer != nil {
			a.indexer.Close() // every file is closed: no more come
		}
		return nil
	}, func(error) {})
	if a.indexer != nil {
		// Ends when the writer has closed its last file and the queue is
		// indexed (an actor that returned early would stop the group).
		g.Add(func() error {
			defer close(indexerDone)
			errs.add("cdxj", a.indexer.Run(sd.hard))
			return nil
		}, func(error) {})
	} else {
		close(indexerDone)
	}
	shipperDone := a.addShipper(&g, &errs, sd, indexerDone, backendsDone)
	g.Add(func() error {
		// After the drain: every written capture has made its dedup save,
		// stats increment and crawl log line; flush them.
		defer close(backendsDone)
		<-writerDone
		errs.add("databases", a.closeBackendsBounded(sd))
		return nil
	}, func(error) {})
	if a.msrv != nil {
		a.addMetricsServer(&g, &errs, backendsDone, shipperDone)
	}
	runErr := g.Run()
	<-indexerDone
	<-shipperDone
	a.removeDirs()
	a.rates.Stop()
	err := errors.Join(runErr, errs.join())
	a.logStopped(err, sd.forced())
	return err
}

// logStopped is the shutdown's last line: what was cut or lost, or that
// nothing was, though a second signal came.
func (a *App) logStopped(err error, forced bool) {
	switch {
	case err != nil:
		a.logger.Error("shutdown incomplete", "err", err)
	case forced:
		a.logger.Info("shutdown complete: the second signal came when nothing was left to cut; " +
			"writer queue drained, WARC files closed, databases flushed")
	default:
		a.logger.Info("shutdown complete: writer queue drained, WARC files closed, databases flushed")
	}
}

// writerGrace is how long past the end of the shutdown budget a step
// that no context interrupts (a write to a disk, a Redis command) has to
// finish; only a device or server that has stopped answering (a hung
// network file system, a frozen Redis) takes longer.
const writerGrace = time.Second

// closeWriter drains the writer queue and closes every file within the
// budget; at its end the writers abort. A writer still stuck in a write
// writerGrace later is left behind, so that the process can exit: its
// file stays .open, holding whole records but perhaps the one being
// written, and the next start cuts it back and closes it.
func (a *App) closeWriter(sd *shutdown) error {
	return pastBudget(sd, func() error { return a.pool.Close(sd.hard) },
		"the disk did not answer within %s after the %v: WARC files left .open for the next start to recover")
}

// closeBackendsBounded flushes and closes the dedup and stats stores
// within the budget. A store call in progress when it ends is not
// interrupted by it (a Redis that hangs holds it up to the client's read
// time-out, 3 s by default, and more than one may be queued), so after
// writerGrace more the process goes on to exit, as for a stuck disk.
func (a *App) closeBackendsBounded(sd *shutdown) error {
	return pastBudget(sd, func() error { return a.closeBackends(sd.hard) },
		"the dedup or stats store did not answer within %s after the %v: "+
			"dedup saves and stats counts not yet stored are lost")
}

// pastBudget runs step and returns its error, waiting for it at most
// writerGrace past the end of the budget; then it leaves it behind and
// returns stuck, formatted with writerGrace and the budget's cause.
func pastBudget(sd *shutdown, step func() error, stuck string) error {
	done := make(chan error, 1)
	go func() { done <- step() }()
	select {
	case err := <-done:
		return err
	case <-sd.hard.Done():
	}
	select {
	case err := <-done:
		return err
	case <-time.After(writerGrace):
		return fmt.Errorf(stuck, writerGrace, context.Cause(sd.hard))
	}
}

// addShipper runs the shipper of --upload-to as an actor (when there is
// one): it ships from the start, and at shutdown goes on with what the
// writer and the indexer close, and the crawl logs, until the budget ends. The returned
// channel closes when it is done.
func (a *App) addShipper(g *run.Group, errs *errList, sd *shutdown, indexerDone, backendsDone <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	if a.shipper == nil {
		close(done)
		return done
	}
	g.Add(func() error {
		defer close(done)
		go func() {
			// Every WARC is closed and indexed (indexerDone follows the
			// writer's end), and the crawl log is closed with the backends.
			<-indexerDone
			<-backendsDone
			a.shipCrawlLogs()
			a.shipper.Close() // no more files come
		}()
		errs.add("upload", a.shipper.Run(sd.hard))
		if a.notifier != nil {
			errs.add("upload webhook", a.notifier.Close())
		}
		return nil
	}, func(error) {})
	return done
}

// runProxy serves the proxy port; after a shutdown it returns once the
// proxy has stopped (proxyDone), so the group waits for it.
func (a *App) runProxy(proxyDone <-chan struct{}) error {
	a.logger.Info("warcproxy listening",
		"address", a.cfg.Address, "port", a.Addr().Port, "dir", a.cfg.Dir,
		"prefix", a.cfg.Prefix, "compression", a.cfg.Compression, "ca_cert", a.CACertFile(),
		"writer_workers", a.cfg.WriterWorkers, "max_conns", a.cfg.MaxConns,
		"upstream_route", routeShown(a.cfg), "onion_route", a.cfg.OnionTorSOCKSProxy, "pid", os.Getpid())
	err := a.proxy.Serve(a.ln)
	if !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("proxy listener: %w", err)
	}
	<-proxyDone
	return nil
}

// addMetricsServer runs --metrics-address as its own actor: a listener
// that fails stops the proxy too (exit 1); at shutdown it closes last.
func (a *App) addMetricsServer(g *run.Group, errs *errList, backendsDone, shipperDone <-chan struct{}) {
	a.logger.Info("serving /metrics and /status", "address", a.mln.Addr().String())
	g.Add(func() error {
		if err := a.msrv.Serve(a.mln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("metrics listener: %w", err)
		}
		return nil
	}, func(error) {
		go func() {
			<-backendsDone
			<-shipperDone
			errs.add("metrics listener", a.msrv.Close())
		}()
	})
}

// shutdown is the budget of one shutdown: soft ends when exchanges in
// flight are cut, hard when every component must stop. Each ends with a
// cause (context.Cause) that the components put in what they report as
// cut or dropped: the second signal, or which deadline passed.
type shutdown struct {
	timeout time.Duration
	force   <-chan struct{}
	once    sync.Once
	soft    context.Context
	hard    context.Context
	stop    context.CancelCauseFunc

	secondSignal, softDeadline, hardDeadline *stopCause
}

func newShutdown(timeout time.Duration, force <-chan struct{}) *shutdown {
	sd := &shutdown{
		timeout:      timeout,
		force:        force,
		secondSignal: &stopCause{why: "second signal"},
		softDeadline: &stopCause{why: fmt.Sprintf("shutdown deadline: %s, 3/4 of --shutdown-timeout", timeout*3/4), deadline: true},
		hardDeadline: &stopCause{why: fmt.Sprintf("end of --shutdown-timeout %s", timeout), deadline: true},
	}
	// hard exists before the shutdown begins (the writer and the indexer
	// wait on it); its clock starts with begin.
	sd.hard, sd.stop = context.WithCancelCause(context.Background())
	return sd
}

// cancel ends hard once all is done (a context must end).
func (sd *shutdown) cancel() { sd.stop(nil) }

// begin starts the clock, once.
func (sd *shutdown) begin() *shutdown {
	sd.once.Do(func() {
		start := time.Now()
		var cancelSoft context.CancelFunc
		sd.soft, cancelSoft = context.WithDeadlineCause(sd.hard, start.Add(sd.timeout*3/4), sd.softDeadline)
		deadline := time.AfterFunc(sd.timeout, func() { sd.stop(sd.hardDeadline) })
		go func() {
			select {
			case <-sd.force:
				sd.stop(sd.secondSignal)
			case <-sd.hard.Done():
			}
			deadline.Stop()
			cancelSoft()
		}()
	})
	return sd
}

// forced reports whether a second signal ended the shutdown.
func (sd *shutdown) forced() bool { return context.Cause(sd.hard) == sd.secondSignal }

// stopCause says what ended a shutdown's context. A deadline is also
// context.DeadlineExceeded for errors.Is, a second signal
// context.Canceled, as the contexts' own errors are.
type stopCause struct {
	why      string
	deadline bool
}

func (c *stopCause) Error() string { return c.why }

func (c *stopCause) Is(target error) bool {
	if c.deadline {
		return target == context.DeadlineExceeded
	}
	return target == context.Canceled
}

// errList gathers the components' errors, each named.
type errList struct {
	mu   sync.Mutex
	errs []error
}

func (l *errList) add(component string, err error) {
	if err == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, fmt.Errorf("%s: %w", component, err))
}

func (l *errList) join() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(l.errs...)
}
