package dedup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// query sends one request and returns the last non-empty line of the
// answer (nil for an empty answer).
func (c *CDX) query(ctx context.Context, uri string) ([]byte, *cdxError) {
	u := *c.base
	// warcprox's parameters in warcprox's order, then the URL's own.
	u.RawQuery = "url=" + url.QueryEscape(uri) + "&fl=timestamp%2Cdigest&filter=%21mimetype%3Awarc%2Frevisit&limit=-1"
	if c.extra != "" {
		u.RawQuery += "&" + c.extra
	}
	u.ForceQuery = false
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &cdxError{reasonConnect, err}
	}
	req.Header.Set("User-Agent", c.opts.UserAgent)
	if c.opts.Cookies != "" {
		req.Header.Set("Cookie", c.opts.Cookies)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		// The error names the request URL: not its API key or password.
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = c.shown
		}
		return nil, classify(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &cdxError{reasonStatus, fmt.Errorf("answered %s", resp.Status)}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxAnswer+1))
	if err != nil {
		return nil, classify(ctx, err)
	}
	if int64(len(body)) > c.opts.MaxAnswer {
		return nil, &cdxError{reasonTooLarge, fmt.Errorf("answer longer than %d bytes", c.opts.MaxAnswer)}
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, nil
	}
	// With limit=-1 the answer is one line; a server that ignores the
	// limit lists captures oldest first, so the last line is the newest.
	if i := bytes.LastIndexByte(body, '\n'); i >= 0 {
		body = bytes.TrimSpace(body[i+1:])
	}
	return body, nil
}
