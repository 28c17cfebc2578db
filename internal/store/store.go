// Package store opens the backends that dedup and stats keep their data in,
// chosen by a spec string:
//
//	none                     no database
//	embedded:PATH            a bbolt file, one per process (locked)
//	redis://host:port/db     a Redis server (also rediss:// for TLS)
//	redis+cluster://h1:p1,h2:p2
//	                         a Redis Cluster, seeded from the given nodes
//
// Dedup and stats may name the same file or server; they then share one
// handle, since a bbolt file can be opened only once. Both open their
// stores through Open (open.go), where a new kind of backend is added.
package store

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/warcproxy/warcproxy/internal/suggest"
)

// Kind is the type of backend a spec names.
type Kind string

// Backend kinds.
const (
	None     Kind = "none"
	Embedded Kind = "embedded"
	Redis    Kind = "redis"
)

// Spec is a parsed backend spec.
type Spec struct {
	Kind Kind
	// Path is the bbolt file of an embedded spec, cleaned.
	Path string
	// Redis holds the client options of a redis:// spec; Cluster those of
	// a redis+cluster:// spec (one of them is set for Kind Redis).
	Redis   *redis.Options
	Cluster *redis.ClusterOptions
	// KeyPrefix starts every Redis key (default "warcproxy:"), so that
	// several crawls or test runs can share one server. It comes from the
	// spec's "prefix" query parameter: redis://host:6379/0?prefix=crawl7:
	KeyPrefix string
	// Raw is the spec as given, for messages (a Redis password is masked).
	Raw string
	key string // the spec as given, to share handles
}

// DefaultKeyPrefix starts Redis keys unless the spec names another prefix.
const DefaultKeyPrefix = "warcproxy:"

// splitKeyPrefix takes the "prefix" query parameter out of a Redis URL,
// which go-redis would reject.
func splitKeyPrefix(s string) (rest, prefix string, err error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", "", err
	}
	q := u.Query()
	prefix = DefaultKeyPrefix
	if q.Has("prefix") {
		prefix = q.Get("prefix")
		q.Del("prefix")
		u.RawQuery = q.Encode()
	}
	return u.String(), prefix, nil
}

// Parse parses a backend spec. "" and "/dev/null" mean none (warcprox's
// --dedup-db-file /dev/null turns dedup off).
func Parse(spec string) (Spec, error) {
	s := strings.TrimSpace(spec)
	switch {
	case s == "" || s == "none" || s == "/dev/null":
		return Spec{Kind: None, Raw: "none"}, nil
	case strings.HasPrefix(s, "embedded:"):
		p := strings.TrimPrefix(s, "embedded:")
		if p == "" {
			return Spec{}, fmt.Errorf("%q: embedded needs a file, e.g. embedded:./warcproxy.db", spec)
		}
		return Spec{Kind: Embedded, Path: filepath.Clean(p), Raw: s}, nil
	case strings.HasPrefix(s, "redis://"), strings.HasPrefix(s, "rediss://"), strings.HasPrefix(s, "unix://"):
		rest, prefix, err := splitKeyPrefix(s)
		if err != nil {
			return Spec{}, fmt.Errorf("%q: %w", mask(s), err)
		}
		o, err := redis.ParseURL(rest)
		if err == nil && o.Network != "unix" {
			err = checkAddrs(o.Addr)
		}
		if err != nil {
			return Spec{}, fmt.Errorf("%q: %w", mask(s), err)
		}
		return Spec{Kind: Redis, Redis: o, KeyPrefix: prefix, Raw: mask(s), key: s}, nil
	case strings.HasPrefix(s, "redis+cluster://"), strings.HasPrefix(s, "rediss+cluster://"):
		rest, prefix, err := splitKeyPrefix(clusterURL(strings.Replace(s, "+cluster", "", 1)))
		if err != nil {
			return Spec{}, fmt.Errorf("%q: %w", mask(s), err)
		}
		o, err := redis.ParseClusterURL(rest)
		if err == nil {
			err = checkAddrs(o.Addrs...)
		}
		if err != nil {
			return Spec{}, fmt.Errorf("%q: %w", mask(s), err)
		}
		return Spec{Kind: Redis, Cluster: o, KeyPrefix: prefix, Raw: mask(s), key: s}, nil
	case strings.Contains(s, "://"):
		return Spec{}, fmt.Errorf("%q: unknown backend (want none, embedded:PATH, redis://host:port/db or redis+cluster://host:port,...)", mask(s))
	default:
		if err := mistypedKind(s); err != nil {
			return Spec{}, err
		}
		// A bare path, as warcprox's --dedup-db-file takes it.
		return Spec{Kind: Embedded, Path: filepath.Clean(s), Raw: "embedded:" + s}, nil
	}
}

// specKinds are the ways a spec starts, for the "did you mean" of one
// whose start is misspelt.
var specKinds = []suggest.Candidate{
	{Name: "none", Say: "none"},
	{Name: "embedded", Say: "embedded:PATH"},
	{Name: "redis", Say: "redis://host:port/db"},
	{Name: "rediss", Say: "rediss://host:port/db"},
	{Name: "unix", Say: "unix:///path/to/redis.sock"},
	{Name: "redis+cluster", Say: "redis+cluster://host:port,host:port"},
}

// mistypedKind reports a bare path that starts like a kind of backend
// misspelt (embeded:./x.db, redis:host:6379): taken as a file name, it
// would make a file or directory of that name and dedup into it.
func mistypedKind(s string) error {
	head, _, found := strings.Cut(s, ":")
	if !found || head == "" || strings.ContainsAny(head, `/\.`) {
		return nil
	}
	if m, _ := suggest.Find(head, specKinds); len(m) > 0 {
		return fmt.Errorf("%q: unknown kind of backend %q: did you mean %s? (a file name with a colon: write embedded:%s)", mask(s), head, strings.Join(m, " or "), s)
	}
	return nil
}

// checkAddrs accepts host:port addresses with a port from 1 to 65535 (the
// Redis client would only fail at the first dial, long after start).
func checkAddrs(addrs ...string) error {
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			return fmt.Errorf("address %q: %w", a, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("address %q: the port must be from 1 to 65535", a)
		}
		if host == "" {
			return fmt.Errorf("address %q: no host", a)
		}
	}
	return nil
}

// clusterURL turns "redis://h1:p1,h2:p2/..." into go-redis's form
// "redis://h1:p1/...?addr=h2:p2".
func clusterURL(s string) string {
	i := strings.Index(s, "://") + 3
	end := len(s)
	if j := strings.IndexAny(s[i:], "/?"); j >= 0 {
		end = i + j
	}
	hosts := s[i:end]
	at := strings.LastIndex(hosts, "@")
	nodes := strings.Split(hosts[at+1:], ",")
	if len(nodes) < 2 {
		return s
	}
	out := s[:i] + hosts[:at+1] + nodes[0] + s[end:]
	sep := "?"
	if strings.Contains(s[end:], "?") {
		sep = "&"
	}
	for _, n := range nodes[1:] {
		out += sep + "addr=" + n
		sep = "&"
	}
	return out
}

// mask hides the password of a URL-like spec.
func mask(s string) string {
	at := strings.LastIndex(s, "@")
	i := strings.Index(s, "://")
	if at < 0 || i < 0 || at < i {
		return s
	}
	userinfo := s[i+3 : at]
	if c := strings.Index(userinfo, ":"); c >= 0 {
		return s[:i+3] + userinfo[:c] + ":xxxxx" + s[at:]
	}
	return s[:i+3] + "xxxxx" + s[at:]
}

// Handles hands out shared database handles, one per file or server, and
// closes each when its last user releases it.
type Handles struct {
	mu    sync.Mutex
	bolts map[string]*ref[*bolt.DB]
	redis map[string]*ref[redis.UniversalClient]
}

// ref is a shared handle and the number of its users.
type ref[T any] struct {
	v     T
	close func() error
	refs  int
}

// share returns the handle under key in *m, opening it first if there is
// none, and a release func (idempotent) whose last call closes it. h.mu is
// held by the caller.
func share[T any](h *Handles, m *map[string]*ref[T], key string, open func() (T, func() error, error)) (T, func() error, error) {
	if *m == nil {
		*m = make(map[string]*ref[T])
	}
	r := (*m)[key]
	if r == nil {
		v, closeFn, err := open()
		if err != nil {
			var zero T
			return zero, nil, err
		}
		r = &ref[T]{v: v, close: closeFn}
		(*m)[key] = r
	}
	r.refs++
	var once sync.Once
	return r.v, func() error {
		var err error
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			r.refs--
			if r.refs == 0 {
				delete(*m, key)
				err = r.close()
			}
		})
		return err
	}, nil
}

// ErrInUse is why an embedded file could not be opened: another process
// holds its lock (a running proxy, or an import).
var ErrInUse = errors.New("another process has it open")

// Bolt opens (or shares) the bbolt file of an embedded spec. Call release
// when done; the last release closes the file.
func (h *Handles) Bolt(s Spec) (db *bolt.DB, release func() error, err error) {
	if s.Kind != Embedded {
		return nil, nil, fmt.Errorf("store: %s is not an embedded spec", s.Raw)
	}
	key, err := filepath.Abs(s.Path)
	if err != nil {
		return nil, nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return share(h, &h.bolts, key, func() (*bolt.DB, func() error, error) {
		db, err := bolt.Open(s.Path, 0o600, &bolt.Options{Timeout: 2 * time.Second, NoFreelistSync: true})
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, nil, fmt.Errorf("opening %s: %w (an embedded database serves one proxy; use Redis to share one index between proxies)", s.Path, ErrInUse)
		}
		if err != nil {
			if isSQLite(s.Path) {
				return nil, nil, fmt.Errorf("opening %s: it is an SQLite file (warcprox's database?); warcproxy keeps its own format (bbolt) and does not read warcprox's: name a new file", s.Path)
			}
			return nil, nil, fmt.Errorf("opening %s: %w", s.Path, err)
		}
		return db, db.Close, nil
	})
}

// Redis returns (or shares) a client for a Redis spec. Call release when
// done; the last release closes the client.
func (h *Handles) Redis(s Spec) (c redis.UniversalClient, release func() error, err error) {
	if s.Kind != Redis {
		return nil, nil, fmt.Errorf("store: %s is not a redis spec", s.Raw)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return share(h, &h.redis, s.key, func() (redis.UniversalClient, func() error, error) {
		var c redis.UniversalClient
		if s.Cluster != nil {
			c = redis.NewClusterClient(s.Cluster)
		} else {
			c = redis.NewClient(s.Redis)
		}
		return c, c.Close, nil
	})
}

// isSQLite reports whether the file at path starts with SQLite's header.
func isSQLite(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [16]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && string(b[:]) == "SQLite format 3\x00"
}
