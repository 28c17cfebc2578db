package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/crawllog"
	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
	"github.com/warcproxy/warcproxy/internal/testutil/zstdcli"
)

// TestZstdCaptures: with --compression zstd (and a dictionary trained by
// `zstd --train`), captures over plain HTTP and inside a MITM tunnel, and
// their revisits, land in .warc.zst files that the zstd command
// decompresses and both WARC readers then read with every digest checked
// (warccheck); dedup works as with gzip; the crawl log and the CDXJ index
// name each record by its frame's offset; /status names the compression.
func TestZstdCaptures(t *testing.T) {
	var samples [][]byte
	for i := range 200 {
		samples = append(samples, fmt.Appendf(nil, "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://127.0.0.1:%d/page\r\n\r\n"+
			"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 34\r\n\r\nthe same payload, whatever the URL", 30000+i))
	}
	dict := zstdcli.Train(t, samples, 4096)
	for _, withDict := range []bool{false, true} {
		t.Run(fmt.Sprintf("dictionary=%v", withDict), func(t *testing.T) {
			logDir := t.TempDir()
			p := startOneWriter(t, func(c *config.Config) {
				c.Compression = "zstd"
				c.ZstdLevel = 7
				c.CrawlLogDir = logDir
				c.CDXJ = true
				if withDict {
					c.ZstdDictionary = filepath.Join(t.TempDir(), "warc.dict")
					require.NoError(t, os.WriteFile(c.ZstdDictionary, dict, 0o644))
				}
			})
			require.Equal(t, "zstd", p.Status(t)["warc_compression"])
			c := p.Client()
			var urls []string
			for _, useTLS := range []bool{false, true} {
				origin := contentOrigin(t, useTLS)
				urls = append(urls, origin.URL+"/page", origin.URL+"/page", origin.URL+"/elsewhere")
			}
			for _, u := range urls {
				resp, body := fetch(t, c, u, "")
				require.Equal(t, 200, resp.StatusCode)
				require.Equal(t, "the same payload, whatever the URL", body)
				p.Settle() // one at a time, so that revisits are revisits
			}
			p.Stop()

			all := warccheck.Dir(t, p.Dir)
			recs := principal(all)
			require.Len(t, recs, len(urls))
			require.Equal(t, "response", recs[0].Type)
			for _, r := range recs[1:] {
				requireRevisitOf(t, r, recs[0]) // the same payload everywhere
			}
			files := map[string]bool{}
			for _, r := range all {
				require.True(t, strings.HasSuffix(r.File, ".warc.zst"), r.File)
				files[r.File] = true
			}
			for f := range files {
				path := filepath.Join(p.Dir, f)
				l := zstdcli.ListFile(t, path)
				require.True(t, l.HasSize && l.HasCheck, "%s: %+v", f, l)
				if withDict {
					require.Equal(t, 1, l.Skippable, "%s starts with the dictionary frame", f)
					_, err := zstdcli.Try(t, nil, "-q", "-t", path)
					require.Error(t, err, "%s: its frames need the dictionary", f)
				}
				zstdcli.Run(t, nil, append(dictArgs(t, withDict, dict), "-q", "-t", path)...)
			}

			// The crawl log and the index point at the frames.
			host, _ := os.Hostname()
			short, _, _ := strings.Cut(host, ".")
			lines := readLines(t, filepath.Join(logDir, "crawl-"+short+"-"+strconv.Itoa(p.App.Addr().Port)+".log"))
			require.Len(t, lines, len(urls))
			for i, line := range lines {
				l, err := crawllog.ParseLine(line)
				require.NoError(t, err, line)
				require.Equal(t, recs[i].File, l.WARCFilename)
				require.Equal(t, recs[i].Offset, l.WARCOffset)
				require.Equal(t, i > 0, l.Revisit)
			}
			offsets := map[string]bool{}
			for _, r := range recs {
				offsets[r.File+" "+strconv.FormatInt(r.Offset, 10)] = true
			}
			indexed := 0
			for f := range files {
				idx, err := os.ReadFile(filepath.Join(p.Dir, strings.TrimSuffix(f, ".warc.zst")+".cdxj"))
				require.NoError(t, err)
				for _, l := range strings.Split(strings.TrimSpace(string(idx)), "\n") {
					var j struct{ Offset, Filename string }
					require.NoError(t, json.Unmarshal([]byte(l[strings.IndexByte(l, '{'):]), &j))
					require.True(t, offsets[j.Filename+" "+j.Offset], "index line %s points at no record's frame", l)
					indexed++
				}
			}
			require.Equal(t, len(recs), indexed)
		})
	}
}

// dictArgs is -D FILE for the zstd command, with the dictionary in a
// file, or nothing.
func dictArgs(t *testing.T, with bool, dict []byte) []string {
	if !with {
		return nil
	}
	path := filepath.Join(t.TempDir(), "warc.dict")
	require.NoError(t, os.WriteFile(path, dict, 0o644))
	return []string{"-D", path}
}
