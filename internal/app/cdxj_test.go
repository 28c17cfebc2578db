package app_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// TestCDXJBesideEachWARC: with --cdxj every closed WARC file gets NAME.cdxj
// beside it, one sorted line per response and revisit, naming the file and
// the record's offset.
func TestCDXJBesideEachWARC(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<p>page %s</p>", r.URL.Query().Get("n"))
	}))
	defer origin.Close()
	p := proxytest.Start(t, func(c *config.Config) {
		c.CDXJ = true
		c.RolloverSize = 4000 // several files
	})
	c := p.Client()
	for i := range 12 {
		resp, err := c.Get(origin.URL + "/p?n=" + strconv.Itoa(i%6)) // the second six are revisits
		require.NoError(t, err)
		resp.Body.Close()
		p.Settle()
	}
	p.Stop()

	byFileOffset := map[string]warccheck.Record{}
	for _, r := range warccheck.Dir(t, p.Dir) {
		if r.Type == "response" || r.Type == "revisit" {
			byFileOffset[r.File+"@"+strconv.FormatInt(r.Offset, 10)] = r
		}
	}
	warcs, err := filepath.Glob(filepath.Join(p.Dir, "*.warc.gz"))
	require.NoError(t, err)
	require.Greater(t, len(warcs), 1)
	lines := 0
	for _, w := range warcs {
		idx := strings.TrimSuffix(w, ".warc.gz") + ".cdxj"
		f, err := os.Open(idx)
		require.NoError(t, err, "index beside %s", w)
		sc := bufio.NewScanner(f)
		prev := ""
		for sc.Scan() {
			line := sc.Text()
			require.LessOrEqual(t, prev, line, "sorted")
			prev = line
			parts := strings.SplitN(line, " ", 3)
			require.Len(t, parts, 3, line)
			var doc struct {
				URL, Filename, Offset, Digest string
			}
			require.NoError(t, json.Unmarshal([]byte(parts[2]), &doc), line)
			require.Equal(t, filepath.Base(w), doc.Filename)
			rec, ok := byFileOffset[doc.Filename+"@"+doc.Offset]
			require.True(t, ok, "the line points at a response or revisit record: %s", line)
			require.Equal(t, rec.TargetURI, doc.URL)
			require.Equal(t, strings.TrimPrefix(rec.Header["WARC-Payload-Digest"], "sha1:"), doc.Digest)
			lines++
		}
		require.NoError(t, sc.Err())
		f.Close()
	}
	require.Equal(t, len(byFileOffset), lines, "every response and revisit is indexed once")
}
