package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/store"
)

// checkStores asks each Redis named by --dedup-db and --stats-db whether
// it takes a connection: a wrong password, user or database number would
// fail every lookup and count for as long as the proxy runs, so it is a
// mistake in the configuration, found before anything is created (run
// beside CheckFiles; here, since package config reads flags and files and
// dials nothing). A Redis that is down or busy is not: the proxy starts
// and retries it at each use. The two are asked at once, so that a start
// waits at most one probe's time.
func checkStores(ctx context.Context, c config.Config) error {
	flags := []struct{ flag, spec string }{{"dedup-db", c.DedupDB}, {"stats-db", c.StatsDB}}
	if c.StatsDB == c.DedupDB {
		flags = flags[:1]
	}
	errs := make([]error, len(flags))
	var wg sync.WaitGroup
	for i, f := range flags {
		s, err := store.Parse(f.spec)
		if err != nil {
			continue // a spec that does not parse is Validate's to report
		}
		wg.Go(func() {
			if err := store.CheckRefused(ctx, s); err != nil {
				errs[i] = fmt.Errorf("--%s: %w", f.flag, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
