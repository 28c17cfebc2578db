package config

import (
	"context"
	"errors"

	"github.com/warcproxy/warcproxy/internal/store"
)

// CheckStores asks each Redis named by --dedup-db and --stats-db whether
// it takes a connection: a wrong password, user or database number would
// fail every lookup and count for as long as the proxy runs, so it is a
// mistake in the configuration, found before anything is created (the
// command runs this after Parse). A Redis that is down or busy is not:
// the proxy starts and retries it at each use.
func (c Config) CheckStores() error {
	var p problems
	seen := map[string]bool{}
	for _, f := range []struct{ flag, spec string }{{"dedup-db", c.DedupDB}, {"stats-db", c.StatsDB}} {
		s, err := store.Parse(f.spec)
		if err != nil || seen[f.spec] {
			continue // a spec that does not parse is Validate's to report
		}
		seen[f.spec] = true
		if err := store.CheckRefused(context.Background(), s); err != nil {
			p.bad(f.flag, "%v", err)
		}
	}
	return errors.Join(p...)
}
