package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		spec      string
		kind      Kind
		path      string
		addr      string
		db        int
		keyPrefix string
		raw       string
	}{
		{spec: "", kind: None, raw: "none"},
		{spec: "none", kind: None, raw: "none"},
		{spec: "/dev/null", kind: None, raw: "none"},
		{spec: "embedded:./x/warcproxy.db", kind: Embedded, path: "x/warcproxy.db", raw: "embedded:./x/warcproxy.db"},
		{spec: "./warcprox.sqlite", kind: Embedded, path: "warcprox.sqlite", raw: "embedded:./warcprox.sqlite"},
		{spec: "./crawl:7.db", kind: Embedded, path: "crawl:7.db", raw: "embedded:./crawl:7.db"},
		{spec: "embedded:redis:6379", kind: Embedded, path: "redis:6379", raw: "embedded:redis:6379"},
		{spec: "redis://127.0.0.1:6379/3", kind: Redis, addr: "127.0.0.1:6379", db: 3, keyPrefix: DefaultKeyPrefix, raw: "redis://127.0.0.1:6379/3"},
		{spec: "redis://:secret@127.0.0.1:6379/0?prefix=crawl7:", kind: Redis, addr: "127.0.0.1:6379", keyPrefix: "crawl7:", raw: "redis://:xxxxx@127.0.0.1:6379/0?prefix=crawl7:"},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			s, err := Parse(tt.spec)
			require.NoError(t, err)
			require.Equal(t, tt.kind, s.Kind)
			require.Equal(t, tt.path, s.Path)
			require.Equal(t, tt.raw, s.Raw)
			require.Equal(t, tt.keyPrefix, s.KeyPrefix)
			if tt.addr != "" {
				require.Equal(t, tt.addr, s.Redis.Addr)
				require.Equal(t, tt.db, s.Redis.DB)
			}
		})
	}
	s, err := Parse("redis+cluster://127.0.0.1:7000,127.0.0.1:7001?prefix=p:")
	require.NoError(t, err)
	require.Equal(t, []string{"127.0.0.1:7000", "127.0.0.1:7001"}, s.Cluster.Addrs)
	require.Equal(t, "p:", s.KeyPrefix)

	for _, bad := range []string{"embedded:", "mysql://x", "redis://127.0.0.1:6379/notanumber",
		"redis://127.0.0.1:99999/0", "redis://127.0.0.1:0/0", "redis+cluster://127.0.0.1:7000,127.0.0.1:70000"} {
		_, err := Parse(bad)
		require.Error(t, err, bad)
	}
}

// TestParseMistypedKind: a spec whose start is a kind of backend misspelt
// is refused with what was meant, not taken for a file of that name.
func TestParseMistypedKind(t *testing.T) {
	for spec, want := range map[string]string{
		"embeded:./x.db":       `unknown kind of backend "embeded": did you mean embedded:PATH?`,
		"redis:127.0.0.1:6379": `unknown kind of backend "redis": did you mean redis://host:port/db?`,
		"nnone:x":              `did you mean none?`,
	} {
		_, err := Parse(spec)
		require.ErrorContains(t, err, want, spec)
	}
}

func TestBoltIsShared(t *testing.T) {
	var h Handles
	s, err := Parse("embedded:" + filepath.Join(t.TempDir(), "w.db"))
	require.NoError(t, err)
	db1, rel1, err := h.Bolt(s)
	require.NoError(t, err)
	db2, rel2, err := h.Bolt(s)
	require.NoError(t, err)
	require.Same(t, db1, db2, "dedup and stats naming one file share one handle")
	require.NoError(t, rel1())
	require.NoError(t, rel1(), "a second release is a no-op")
	require.NotEmpty(t, db2.Path(), "still open for its other user")
	require.NoError(t, db2.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists([]byte("b")); return err }))
	require.NoError(t, rel2())
	// Closed now: a fresh Handles can open the file again.
	var h2 Handles
	db3, rel3, err := h2.Bolt(s)
	require.NoError(t, err)
	require.NoError(t, db3.View(func(tx *bolt.Tx) error {
		require.NotNil(t, tx.Bucket([]byte("b")))
		return nil
	}))
	require.NoError(t, rel3())
}

// A warcprox user pointing -j at warcprox's SQLite file is told why it
// cannot be used.
func TestBoltRefusesSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "warcprox.sqlite")
	data := append([]byte("SQLite format 3\x00"), make([]byte, 4096)...)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	s, err := Parse(path)
	require.NoError(t, err)
	var h Handles
	_, _, err = h.Bolt(s)
	require.ErrorContains(t, err, "SQLite")
	require.ErrorContains(t, err, "name a new file")
}
