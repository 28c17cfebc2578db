package proxy

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/warcproxy/warcproxy/jobs"
)

// Jobs (--jobs): a request belongs to a crawl job by its proxy credentials
// (user name = job name) or by the job's own port; inside a CONNECT tunnel
// every request is the CONNECT's job. The job's Warcprox-Meta then applies
// as the crawler's header would (admit). Each connection keeps the table
// of its start: a reload (SetJobs) applies to new connections.

type connJobsKey struct{}
type jobKey struct{}

// connJobs is what a client connection learned of the jobs when it was
// accepted: the table then, and the job whose port it arrived on.
type connJobs struct {
	table *jobs.Table
	port  *jobs.Job
}

// SetJobs puts a new job table in force for new connections (nil: none).
func (s *Server) SetJobs(t *jobs.Table) { s.jobs.Store(t) }

// withConnJobs is the outer server's ConnContext: the table in force and
// the port's job, fixed for the connection's life.
func (s *Server) withConnJobs(ctx context.Context, c net.Conn) context.Context {
	t := s.jobs.Load()
	if t == nil {
		return ctx
	}
	cj := connJobs{table: t}
	if a, ok := c.LocalAddr().(*net.TCPAddr); ok {
		cj.port = t.OnPort(a.Port)
	}
	return context.WithValue(ctx, connJobsKey{}, cj)
}

// jobOf is the job of a request after authorize: the tunnel's, or the
// one authorize found for a plain request; nil for none.
func jobOf(r *http.Request) *jobs.Job {
	if tun, _ := r.Context().Value(tunnelKey{}).(*tunnel); tun != nil {
		return tun.job
	}
	j, _ := r.Context().Value(jobKey{}).(*jobs.Job)
	return j
}

// credentials are a request's Basic proxy credentials.
type credentials struct {
	given      bool
	user, pass string
	raw        []byte // user:password as sent
}

func proxyCredentials(r *http.Request) credentials {
	scheme, cred, ok := strings.Cut(r.Header.Get("Proxy-Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return credentials{given: r.Header.Get("Proxy-Authorization") != ""}
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return credentials{given: true}
	}
	user, pass, _ := strings.Cut(string(raw), ":")
	return credentials{given: true, user: user, pass: pass, raw: raw}
}

// Why a request gets a 407, for the log (never the credentials).
var (
	errNoCredentials    = errors.New("no proxy credentials")
	errUnknownUser      = errors.New("unknown proxy user")
	errWrongPassword    = errors.New("wrong password for the job")
	errOtherJobsPort    = errors.New("another job's credentials on a job's port")
	errProxyUserUnknown = errors.New("proxy credentials not accepted")
)

// whose decides the job of a request from its credentials and the port
// its connection arrived on. proxyRequest is false for the proxy's own
// /status and /metrics, which need credentials only with --proxy-auth.
func (s *Server) whose(cj connJobs, cred credentials, proxyRequest bool) (*jobs.Job, error) {
	if cred.given {
		if j := cj.table.Named(cred.user); j != nil && cred.raw != nil {
			switch {
			case !j.PasswordOK(cred.pass):
				return nil, errWrongPassword
			case cj.port != nil && cj.port != j:
				return nil, errOtherJobsPort
			}
			return j, nil
		}
		if s.proxyUser(cred.raw) {
			return cj.port, nil
		}
		if cj.table == nil {
			return nil, errProxyUserUnknown
		}
		return nil, errUnknownUser
	}
	switch {
	case len(s.opts.ProxyAuth) > 0:
		return nil, errNoCredentials
	case cj.port != nil:
		return cj.port, nil
	case cj.table == nil || cj.table.AllowAnonymous || !proxyRequest:
		return nil, nil
	}
	return nil, errNoCredentials
}

// jobCounts are the requests admitted per job, by name, for /status and
// warcproxy_job_requests_total; a job keeps its count across reloads.
type jobCounts struct{ m sync.Map } // name → *atomic.Int64

func (c *jobCounts) add(name string) {
	n, ok := c.m.Load(name)
	if !ok {
		n, _ = c.m.LoadOrStore(name, new(atomic.Int64))
	}
	n.(*atomic.Int64).Add(1)
}

// snapshot is every count, by job name.
func (c *jobCounts) snapshot() map[string]int64 {
	counts := map[string]int64{}
	c.m.Range(func(k, v any) bool {
		counts[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return counts
}

// jobRequestCounts are the requests admitted per job: every job of the
// table in force (0 for those not seen yet) and every job counted since
// the start.
func (s *Server) jobRequestCounts() map[string]int64 {
	counts := s.jobRequests.snapshot()
	for _, j := range s.jobs.Load().Jobs() {
		if _, ok := counts[j.Name]; !ok {
			counts[j.Name] = 0
		}
	}
	return counts
}

// jobsStatus is /status's "jobs": per job, the requests admitted and its
// port; nil without --jobs.
func (s *Server) jobsStatus() map[string]any {
	t := s.jobs.Load()
	counts := s.jobRequestCounts()
	if t == nil && len(counts) == 0 {
		return nil
	}
	st := make(map[string]any, len(counts))
	for name, n := range counts {
		job := map[string]any{"requests": n, "loaded": t.Named(name) != nil}
		if j := t.Named(name); j != nil && j.Port != 0 {
			job["port"] = j.Port
		}
		st[name] = job
	}
	return st
}
