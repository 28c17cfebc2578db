package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/upload"
)

// checkStores asks each Redis named by --dedup-db and --stats-db whether
// it takes a connection: a wrong password, user or database number would
// fail every lookup and count for as long as the proxy runs, so it is a
// mistake in the configuration, found before anything is created (run
// beside CheckFiles; here, since package config reads flags and files and
// dials nothing). A Redis that is down or busy is not: the proxy starts
// and retries it at each use. The store of --upload-to is asked the same
// (checkUploadStore). They are all asked at once, so that a start
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
	var uploadErr error
	if c.UploadTo != "" {
		wg.Go(func() { uploadErr = checkUploadStore(ctx, c) })
	}
	wg.Wait()
	return errors.Join(append(errs, uploadErr)...)
}

// checkUploadStore asks the store of --upload-to whether it takes the
// credentials and has the bucket: a refusal would fail every upload for
// as long as the proxy runs. One that is down or slow is not a mistake.
func checkUploadStore(ctx context.Context, c config.Config) error {
	target, err := upload.ParseTarget(c.UploadTo)
	if err != nil {
		return nil // Validate's to report
	}
	ca, err := c.UploadCA()
	if err != nil {
		return nil // CheckFiles' to report
	}
	err = upload.CheckRefused(ctx, upload.S3Options{Bucket: target.Bucket, Endpoint: c.UploadEndpoint, CAPEM: ca}, target)
	if err != nil {
		return fmt.Errorf("--upload-to %s: %w", target, err)
	}
	return nil
}
