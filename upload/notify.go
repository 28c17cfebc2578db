package upload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Notifier delivers completion events (--upload-webhook): at least once,
// so a receiver drops repeats by the event's ID.
type Notifier interface {
	Notify(ctx context.Context, e Event) error
	Close() error
}

// NewNotifier reads --upload-webhook: http:// or https:// for a JSON POST,
// redis://[user:password@]host:port/DB/KEY (or rediss://) for an RPUSH of
// the JSON to the list KEY.
func NewNotifier(webhook string) (Notifier, error) {
	u, err := url.Parse(webhook)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL", webhook)
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return nil, fmt.Errorf("%q has no host", webhook)
		}
		return &httpNotifier{url: webhook, client: &http.Client{Timeout: 30 * time.Second}}, nil
	case "redis", "rediss":
		return newRedisNotifier(u)
	}
	return nil, fmt.Errorf("%q: want http(s)://host/path (a JSON POST) or redis://host:port/DB/KEY (an RPUSH to the list KEY)", webhook)
}

// eventID is the SHA-256 of the key and the file's hash.
func eventID(key, sum string) string {
	h := sha256.Sum256([]byte(key + "\n" + sum))
	return hex.EncodeToString(h[:])
}

type httpNotifier struct {
	url    string
	client *http.Client
}

func (n *httpNotifier) Notify(ctx context.Context, e Event) error {
	body, err := json.Marshal(e)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "warcproxy")
	resp, err := n.client.Do(req)
	if err != nil {
		return fmt.Errorf("posting the completion event: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("posting the completion event: the receiver answered %s", resp.Status)
	}
	return nil
}

func (n *httpNotifier) Close() error { n.client.CloseIdleConnections(); return nil }

type redisNotifier struct {
	client *redis.Client
	key    string
}

// newRedisNotifier reads redis://host:port/DB/KEY.
func newRedisNotifier(u *url.URL) (Notifier, error) {
	parts := strings.SplitN(strings.TrimPrefix(u.Path, "/"), "/", 2)
	if len(parts) != 2 || parts[1] == "" {
		return nil, fmt.Errorf("%q: want %s://host:port/DB/KEY, the list KEY in database DB", u.Redacted(), u.Scheme)
	}
	if _, err := strconv.Atoi(parts[0]); err != nil {
		return nil, fmt.Errorf("%q: the database %q is not a number", u.Redacted(), parts[0])
	}
	base := *u
	base.Path = "/" + parts[0]
	opts, err := redis.ParseURL(base.String())
	if err != nil {
		return nil, fmt.Errorf("%q: %w", u.Redacted(), err)
	}
	return &redisNotifier{client: redis.NewClient(opts), key: parts[1]}, nil
}

func (n *redisNotifier) Notify(ctx context.Context, e Event) error {
	body, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := n.client.RPush(ctx, n.key, body).Err(); err != nil {
		return fmt.Errorf("pushing the completion event to %s: %w", n.key, err)
	}
	return nil
}

func (n *redisNotifier) Close() error { return n.client.Close() }
