package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/warcproxy/warcproxy/jobs"
	"github.com/warcproxy/warcproxy/writer"
)

// LoadJobs reads --jobs (nil without it) and checks it against the rest
// of the configuration: with --proxy-auth every job needs a password (the
// credentials are required anyway, and a job without one would let any
// password in) and no job may be named as a proxy user; a job's port
// must not be taken by another listener. The command runs it at start
// (exit 2) and at every SIGHUP, when a failure keeps the old table.
func (c Config) LoadJobs() (*jobs.Table, error) {
	if c.Jobs == "" {
		return nil, nil
	}
	t, err := jobs.Load(c.Jobs, writer.CheckPrefix)
	if err != nil {
		return nil, err
	}
	pairs, err := c.ProxyAuthPairs()
	if err != nil {
		return nil, err
	}
	var problems []error
	if len(pairs) > 0 {
		users := make([]string, len(pairs))
		for i, pair := range pairs {
			users[i], _, _ = strings.Cut(pair, ":")
		}
		for _, j := range t.Jobs() {
			switch {
			case !j.HasPassword():
				problems = append(problems, fmt.Errorf("job %q has no password, which --proxy-auth requires of every client", j.Name))
			case slices.Contains(users, j.Name):
				problems = append(problems, fmt.Errorf("job %q is also a --proxy-auth user: a user name must select one or the other", j.Name))
			}
		}
	}
	problems = append(problems, c.jobPortClashes(t)...)
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s: %w", c.Jobs, errors.Join(problems...))
	}
	return t, nil
}

// jobPortClashes are the jobs' ports that another listener (or another
// job, which jobs.Parse refuses already) would take.
func (c Config) jobPortClashes(t *jobs.Table) []error {
	ls := c.listeners()
	for _, j := range t.Jobs() {
		if j.Port != 0 {
			ls = append(ls, listener{flags: fmt.Sprintf("job %q (port %d on --address %s)", j.Name, j.Port, shownHost(c.Address)),
				host: c.Address, port: j.Port})
		}
	}
	var p problems
	checkListeners(&p, ls)
	return p
}
