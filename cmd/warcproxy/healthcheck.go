package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/warcproxy/warcproxy/internal/suggest"
)

const (
	// defaultHealthURL is /status on the metrics listener as the container
	// image configures it (--metrics-address 0.0.0.0:9100).
	defaultHealthURL = "http://127.0.0.1:9100/status"
	// healthTimeout stays under the image's HEALTHCHECK --timeout (5 s), so
	// a hung proxy is reported with a reason rather than killed silently.
	healthTimeout = 4 * time.Second
)

// healthcheckCommand is `warcproxy healthcheck [URL]`, for images without
// a shell or wget: exit 0 when URL answers 200, otherwise say why on
// stderr and exit 1 (Docker reserves 2, so a bad argument is 1 too).
func healthcheckCommand(args []string, stderr io.Writer) int {
	// No flags but --help; the flag set still explains a mistyped one
	// (--hlep) the way every command does.
	fs := flag.NewFlagSet("warcproxy healthcheck", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(stderr, "Usage: warcproxy healthcheck [URL]\n\nExit 0 if GET URL answers 200 within %s, else 1.\nURL defaults to %s; no proxy is used.\n", healthTimeout, defaultHealthURL)
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "warcproxy healthcheck: %v\nRun warcproxy healthcheck --help for usage.\n", suggest.FlagError(fs, args, err))
		return 1
	case fs.NArg() > 1:
		fmt.Fprintf(stderr, "warcproxy healthcheck: one URL at most, got %d arguments\n", fs.NArg())
		return 1
	}
	target := defaultHealthURL
	if fs.NArg() == 1 {
		target = fs.Arg(0)
	}
	if err := healthcheck(context.Background(), target, healthTimeout); err != nil {
		fmt.Fprintf(stderr, "warcproxy healthcheck: %v\n", err)
		return 1
	}
	return 0
}

// healthcheck GETs target directly (never through a proxy from the
// environment) and returns nil only for a 200 answer within timeout.
func healthcheck(ctx context.Context, target string, timeout time.Duration) error {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http:// or https:// URL", target)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("building request: %w", err)
	}
	client := &http.Client{
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		// A redirect is not the 200 we asked for.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("GET %s: no answer within %s", target, timeout)
		}
		// *url.Error would repeat the method and URL.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("GET %s: %w", target, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", target, resp.Status)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return nil
}
