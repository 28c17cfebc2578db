package jobs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/warcproxmeta"
)

const twoJobs = `
jobs:
  - name: jobA
    password: secret-a
    port: 8001
    warcprox-meta:
      warc-prefix: jobA
      stats: {buckets: [bucketA]}
      limits: {bucketA/total/urls: 100}
    locked: [warc-prefix]
  - name: jobB
    warcprox-meta:
      warc-prefix: jobB
`

func noSlash(p string) error {
	if strings.Contains(p, "/") {
		return errors.New("slash")
	}
	return nil
}

func TestParseTable(t *testing.T) {
	tab, err := Parse([]byte(twoJobs), noSlash)
	require.NoError(t, err)
	require.False(t, tab.AllowAnonymous)
	require.Equal(t, []int{8001}, tab.Ports())
	a, b := tab.Named("jobA"), tab.Named("jobB")
	require.NotNil(t, a)
	require.NotNil(t, b)
	require.Same(t, a, tab.OnPort(8001))
	require.Nil(t, tab.OnPort(8002))
	require.Nil(t, tab.Named("jobC"))
	require.True(t, a.HasPassword())
	require.True(t, a.PasswordOK("secret-a"))
	require.False(t, a.PasswordOK("secret-b"))
	require.False(t, a.PasswordOK(""))
	require.False(t, b.HasPassword())
	require.True(t, b.PasswordOK("anything"), "a job without a password takes any")

	m, err := a.Meta(new(warcproxmeta.Parser), "")
	require.NoError(t, err)
	require.Equal(t, "jobA", *m.WarcPrefix)
	require.Equal(t, []warcproxmeta.Bucket{{Name: "bucketA"}}, m.StatsBuckets())
	require.Len(t, m.Limits, 1)
	require.Equal(t, int64(100), m.Limits[0].Value)
}

// TestMetaMerge: each top-level field a request's own header names
// replaces the job's; the others stay the job's; a locked one refuses.
func TestMetaMerge(t *testing.T) {
	tab, err := Parse([]byte(twoJobs), noSlash)
	require.NoError(t, err)
	a := tab.Named("jobA")
	p := new(warcproxmeta.Parser)

	m, err := a.Meta(p, `{"stats": {"buckets": ["other"]}, "accept": ["capture-metadata"]}`)
	require.NoError(t, err)
	require.Equal(t, "jobA", *m.WarcPrefix, "not named by the header: the job's")
	require.Equal(t, []warcproxmeta.Bucket{{Name: "other"}}, m.StatsBuckets(), "named: the header's")
	require.True(t, m.Accepts("capture-metadata"))
	require.Len(t, m.Limits, 1, "the job's limits stay")

	_, err = a.Meta(p, `{"warc-prefix": "mine"}`)
	require.ErrorIs(t, err, ErrLocked)
	require.Contains(t, err.Error(), `"warc-prefix"`)
	require.Contains(t, err.Error(), `"jobA"`)

	_, err = a.Meta(p, `{"stats": 3}`)
	require.ErrorIs(t, err, warcproxmeta.ErrInvalid, "the header's own errors are warcproxmeta's")
	_, err = a.Meta(p, `not json`)
	require.ErrorIs(t, err, warcproxmeta.ErrInvalid)

	b := tab.Named("jobB")
	m, err = b.Meta(p, `{"warc-prefix": "mine"}`)
	require.NoError(t, err)
	require.Equal(t, "mine", *m.WarcPrefix, "jobB does not lock it")
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"empty", "", "empty"},
		{"no jobs", "jobs: []", "no jobs"},
		{"unknown key", "jobs:\n  - name: a\n    pasword: x\n", "field pasword not found"},
		{"unknown top key", "job:\n  - name: a\n", "field job not found"},
		{"no name", "jobs:\n  - port: 8001\n", "job 1 (no name): no name"},
		{"colon in name", "jobs:\n  - name: 'a:b'\n", "no colon"},
		{"twice", "jobs:\n  - name: a\n  - name: a\n", `name "a" given twice`},
		{"port twice", "jobs:\n  - name: a\n    port: 9000\n  - name: b\n    port: 9000\n", `port 9000 is job "a"'s already`},
		{"bad port", "jobs:\n  - name: a\n    port: 70000\n", "port 70000: want 1 to 65535"},
		{"meta not a mapping", "jobs:\n  - name: a\n    warcprox-meta: [1]\n", "want a mapping"},
		{"bad meta field", "jobs:\n  - name: a\n    warcprox-meta: {stats: 3}\n", `field "stats"`},
		{"bad prefix", "jobs:\n  - name: a\n    warcprox-meta: {warc-prefix: 'x/y'}\n", "warc-prefix"},
		{"unknown locked", "jobs:\n  - name: a\n    locked: [warc_prefix]\n", `locked: "warc_prefix" is not a Warcprox-Meta field`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file), noSlash)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	_, err := Load(path, nil)
	require.ErrorContains(t, err, "reading jobs file")
	require.NoError(t, os.WriteFile(path, []byte("allow-anonymous: true\n"+twoJobs), 0o600))
	tab, err := Load(path, nil)
	require.NoError(t, err)
	require.True(t, tab.AllowAnonymous)
	require.NoError(t, os.WriteFile(path, []byte("jobs: {"), 0o600))
	_, err = Load(path, nil)
	require.ErrorContains(t, err, "jobs file "+path)
}

func TestNilTable(t *testing.T) {
	var tab *Table
	require.Nil(t, tab.Named("a"))
	require.Nil(t, tab.OnPort(1))
	require.Empty(t, tab.Ports())
	require.Empty(t, tab.Jobs())
}
