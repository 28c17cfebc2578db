//go:build unix

package app_test

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
)

// TestShutdownRemovesOnlyDirsItMade: a directory the operator named and
// made is never removed, empty or not (an empty --tmp-dir listed in
// systemd's ReadWritePaths= must be there for the next start); those the
// run made are removed at shutdown when empty, deepest first, and their
// parents are 0755 while the named directory keeps its own mode.
func TestShutdownRemovesOnlyDirsItMade(t *testing.T) {
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	mode := func(m fs.FileMode) fs.FileMode { return m &^ fs.FileMode(umask) }
	for _, tc := range []struct {
		name    string
		prepare []string // directories made before the start, under base
		set     func(c *config.Config, base string)
		fetch   bool                   // archive one response
		during  map[string]fs.FileMode // while it runs: directory → mode
		after   []string               // there after shutdown
		gone    []string               // not there after shutdown
	}{
		{
			name:    "existing empty --tmp-dir",
			prepare: []string{"spool"},
			set:     func(c *config.Config, base string) { c.TmpDir = filepath.Join(base, "spool") },
			after:   []string{"spool"},
		},
		{
			name:   "--tmp-dir whose parents are missing",
			set:    func(c *config.Config, base string) { c.TmpDir = filepath.Join(base, "a", "b", "spool") },
			during: map[string]fs.FileMode{"a": 0o755, "a/b": 0o755, "a/b/spool": 0o700},
			gone:   []string{"a"},
		},
		{
			name:    "--tmp-dir under an existing parent",
			prepare: []string{"a"},
			set:     func(c *config.Config, base string) { c.TmpDir = filepath.Join(base, "a", "b", "spool") },
			after:   []string{"a"},
			gone:    []string{"a/b"},
		},
		{
			name:   "default spool in a --dir it made, nothing archived",
			during: map[string]fs.FileMode{"warcs": 0o755, "warcs/.spool": 0o700},
			gone:   []string{"warcs"},
		},
		{
			name:   "default spool in a --dir it made, with a WARC",
			fetch:  true,
			after:  []string{"warcs"},
			gone:   []string{"warcs/.spool"},
			during: map[string]fs.FileMode{"warcs/.spool": 0o700},
		},
		{
			// As before: the default spool is the proxy's own, removed
			// when empty even if an earlier run left it.
			name:    "existing --dir with an earlier run's spool",
			prepare: []string{"warcs/.spool"},
			after:   []string{"warcs"},
			gone:    []string{"warcs/.spool"},
		},
		{
			name:    "existing empty --dir and --crawl-log-dir",
			prepare: []string{"warcs", "crawl"},
			set:     func(c *config.Config, base string) { c.CrawlLogDir = filepath.Join(base, "crawl") },
			after:   []string{"warcs", "crawl"},
		},
		{
			name: "--crawl-log-dir and --certs-dir it made",
			set: func(c *config.Config, base string) {
				c.CrawlLogDir, c.CertsDir = filepath.Join(base, "log", "crawl"), filepath.Join(base, "certs")
			},
			during: map[string]fs.FileMode{"log": 0o755, "log/crawl": 0o755, "certs": 0o700},
			gone:   []string{"log", "certs"},
		},
		{
			name:   "CA and database directories it made hold their files",
			set:    func(c *config.Config, base string) { c.CACert = filepath.Join(base, "tls", "ca", "ca.pem") },
			during: map[string]fs.FileMode{"tls": 0o755, "tls/ca": 0o700},
			after:  []string{"tls/ca/ca.pem"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			for _, d := range tc.prepare {
				require.NoError(t, os.MkdirAll(filepath.Join(base, d), 0o750))
			}
			p := proxytest.Start(t, func(c *config.Config) {
				c.Dir = filepath.Join(base, "warcs")
				if tc.set != nil {
					tc.set(c, base)
				}
			})
			for d, want := range tc.during {
				st, err := os.Stat(filepath.Join(base, d))
				require.NoError(t, err)
				require.Equal(t, mode(want), st.Mode().Perm(), "mode of %s", d)
			}
			if tc.fetch {
				fetchOne(t, p)
			}
			p.Stop()
			for _, d := range tc.after {
				_, err := os.Stat(filepath.Join(base, d))
				require.NoError(t, err, "%s is kept", d)
			}
			for _, d := range tc.gone {
				_, err := os.Stat(filepath.Join(base, d))
				require.ErrorIs(t, err, fs.ErrNotExist, "%s is removed", d)
			}
		})
	}
}

// fetchOne archives one response through p.
func fetchOne(t *testing.T, p *proxytest.Proxy) {
	t.Helper()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("hello")) }))
	defer origin.Close()
	resp, err := p.Client().Get(origin.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	p.Settle()
}
