package store_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/stats"
)

// user opens its store as the proxy does.
type user struct {
	name string
	open func(store.Spec, *store.Handles) (io.Closer, error)
}

// users are dedup and stats, each through its Open.
func users() []user {
	return []user{
		{"dedup", func(s store.Spec, h *store.Handles) (io.Closer, error) {
			st, err := dedup.Open(s, h)
			if st == nil {
				return nil, err
			}
			return st, err
		}},
		{"stats", func(s store.Spec, h *store.Handles) (io.Closer, error) {
			st, err := stats.Open(s, h)
			if st == nil {
				return nil, err
			}
			return st, err
		}},
	}
}

// TestOpenSameAnswers: dedup and stats open a backend one way, so the same
// spec gets the same answer from both: the same error for the same
// mistake, no store for none, and a handle of its own without Handles.
func TestOpenSameAnswers(t *testing.T) {
	dir := t.TempDir()
	sqlite := filepath.Join(dir, "warcprox.sqlite")
	require.NoError(t, os.WriteFile(sqlite, append([]byte("SQLite format 3\x00"), make([]byte, 4096)...), 0o644))
	parse := func(s string) store.Spec {
		spec, err := store.Parse(s)
		require.NoError(t, err)
		return spec
	}
	missing := filepath.Join(dir, "no", "such", "dir", "x.db")
	for _, tt := range []struct {
		name    string
		spec    store.Spec
		h       *store.Handles
		err     string // "": opens
		isErr   error
		noStore bool
	}{
		{name: "none", spec: parse("none"), h: &store.Handles{}, noStore: true},
		{name: "none without handles", spec: parse(""), noStore: true},
		{name: "no kind", spec: store.Spec{Raw: "x"}, h: &store.Handles{}, isErr: store.ErrNoKind,
			err: "store: a spec without a kind (not made by store.Parse)"},
		{name: "unknown kind", spec: store.Spec{Kind: "carrier-pigeon", Raw: "carrier-pigeon://x"}, h: &store.Handles{},
			err: `store: carrier-pigeon://x: unknown kind of backend "carrier-pigeon" (have none, embedded, redis)`},
		{name: "embedded in a missing directory", spec: parse("embedded:" + missing), h: &store.Handles{},
			err: "embedded:" + missing + ": opening " + missing + ": open " + missing + ": no such file or directory"},
		{name: "embedded on an SQLite file", spec: parse(sqlite), h: &store.Handles{},
			err: "embedded:" + sqlite + ": opening " + sqlite + ": it is an SQLite file"},
		{name: "embedded without handles", spec: parse("embedded:" + filepath.Join(dir, "own.db"))},
		{name: "redis without handles", spec: parse("redis://127.0.0.1:1/0")}, // not dialled until used
	} {
		t.Run(tt.name, func(t *testing.T) {
			var errs []string
			for _, u := range users() {
				s, err := u.open(tt.spec, tt.h)
				switch {
				case tt.err != "":
					require.ErrorContains(t, err, tt.err, u.name)
					require.Nil(t, s, u.name)
					errs = append(errs, err.Error())
				case tt.noStore:
					require.NoError(t, err, u.name)
					require.Nil(t, s, u.name)
				default:
					require.NoError(t, err, u.name)
					require.NotNil(t, s, u.name)
					require.NoError(t, s.Close(), u.name+": its own handle is released at Close")
				}
				if tt.isErr != nil {
					require.ErrorIs(t, err, tt.isErr, u.name)
				}
			}
			if len(errs) == 2 {
				require.Equal(t, errs[0], errs[1], "dedup and stats say the same")
			}
		})
	}
}

// failing is a user that cannot make its store in either backend.
type failing struct{}

var errCannot = errors.New("cannot")

func (failing) Embedded(*bolt.DB, func() error, store.Spec) (io.Closer, error) {
	return nil, errCannot
}

func (failing) Redis(redis.UniversalClient, func() error, store.Spec) (io.Closer, error) {
	return nil, errCannot
}

// A user that cannot make its store gets its error with the spec named,
// and the handle is released: the file is free for another opener at once
// (bbolt's lock would keep it for two seconds, then fail).
func TestOpenReleasesWhatAUserCouldNotUse(t *testing.T) {
	spec, err := store.Parse("embedded:" + filepath.Join(t.TempDir(), "w.db"))
	require.NoError(t, err)
	var h store.Handles
	_, err = store.Open[io.Closer](spec, &h, failing{})
	require.ErrorIs(t, err, errCannot)
	require.EqualError(t, err, spec.Raw+": cannot")

	db, err := bolt.Open(spec.Path, 0o600, &bolt.Options{Timeout: 100 * time.Millisecond})
	require.NoError(t, err, "the failed open left the file locked")
	require.NoError(t, db.Close())
}
