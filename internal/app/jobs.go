package app

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/warcproxy/warcproxy/jobs"
)

// jobTable is --jobs as the wiring holds it: the table in force, the
// listeners of its jobs' ports, and the reloads' counters. The proxy
// reads the table it is given (proxy.(*Server).SetJobs); SIGHUP makes a
// new one (ReloadJobs).
type jobTable struct {
	mu      sync.Mutex
	table   *jobs.Table
	ports   map[int]net.Listener
	reloads prometheus.Counter
	errors  prometheus.Counter
}

// openJobs reads --jobs and binds its jobs' ports, before anything is
// created, as the proxy port is.
func (a *App) openJobs() error {
	t, err := a.cfg.LoadJobs()
	if err != nil {
		return fmt.Errorf("--jobs: %w", err)
	}
	a.jobs.table = t
	a.jobs.ports, err = a.listenJobPorts(t, nil)
	return err
}

// listenJobPorts binds the ports of t's jobs that have (a table's
// listeners) does not hold yet; on a failure it closes those it bound.
func (a *App) listenJobPorts(t *jobs.Table, have map[int]net.Listener) (map[int]net.Listener, error) {
	bound := map[int]net.Listener{}
	for _, j := range t.Jobs() {
		if j.Port == 0 || have[j.Port] != nil {
			continue
		}
		ln, err := net.Listen(listenNetwork(a.cfg.Address), net.JoinHostPort(a.cfg.Address, strconv.Itoa(j.Port)))
		if err != nil {
			closeAll(bound)
			return nil, fmt.Errorf("listening on job %q's port: %w", j.Name, err)
		}
		bound[j.Port] = ln
	}
	return bound, nil
}

func closeAll(lns map[int]net.Listener) {
	for _, ln := range lns {
		ln.Close()
	}
}

// registerJobs adds the reload metrics (and the gauge of jobs in force).
func (a *App) registerJobs(reg prometheus.Registerer) error {
	a.jobs.reloads = prometheus.NewCounter(prometheus.CounterOpts{Name: "warcproxy_jobs_reloads_total",
		Help: "Reloads of the --jobs file on SIGHUP that put a new table in force."})
	a.jobs.errors = prometheus.NewCounter(prometheus.CounterOpts{Name: "warcproxy_jobs_reload_errors_total",
		Help: "Reloads of the --jobs file that failed (a bad file, a port that cannot be bound): the previous table stays in force."})
	loaded := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "warcproxy_jobs",
		Help: "Crawl jobs in the --jobs table in force."}, func() float64 {
		a.jobs.mu.Lock()
		defer a.jobs.mu.Unlock()
		return float64(len(a.jobs.table.Jobs()))
	})
	return errors.Join(reg.Register(a.jobs.reloads), reg.Register(a.jobs.errors), reg.Register(loaded))
}

// ReloadJobs reads --jobs again (on SIGHUP) and puts the new table in
// force for new connections: its new ports are bound first, and only
// then the ports it no longer names are closed (connections accepted on
// them go on). A file that fails to load or a port that cannot be bound
// keeps the old table, logged and counted.
func (a *App) ReloadJobs() error {
	if a.cfg.Jobs == "" {
		a.logger.Info("SIGHUP received: nothing to reload (no --jobs file), going on")
		return nil
	}
	a.jobs.mu.Lock()
	defer a.jobs.mu.Unlock()
	t, err := a.cfg.LoadJobs()
	var added map[int]net.Listener
	if err == nil {
		added, err = a.listenJobPorts(t, a.jobs.ports)
	}
	if err != nil {
		a.jobs.errors.Inc()
		a.logger.Error("reloading --jobs failed: the previous jobs stay in force", "file", a.cfg.Jobs, "err", err)
		return err
	}
	a.proxy.SetJobs(t)
	for port, ln := range added {
		a.jobs.ports[port] = ln
		a.proxy.ServePort(ln)
	}
	for port, ln := range a.jobs.ports {
		if t.OnPort(port) == nil {
			ln.Close()
			delete(a.jobs.ports, port)
		}
	}
	a.jobs.table = t
	a.jobs.reloads.Inc()
	a.logger.Info("jobs reloaded: new connections go by the new table", "file", a.cfg.Jobs,
		"jobs", len(t.Jobs()), "ports", slices.Sorted(maps.Keys(a.jobs.ports)))
	return nil
}
