package cdxj_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/cdxj"
	"github.com/warcproxy/warcproxy/internal/warcscan"
	"github.com/warcproxy/warcproxy/writer"
)

// TestWalk: Walk reads a WARC from any reader and gives IndexFile's lines
// (unsorted), naming the file as told, and each response record with its
// HTTP head and body; a visitor's error ends the walk.
func TestWalk(t *testing.T) {
	date := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	capture := func(uri, resp string) *writer.Capture {
		req := "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
		return &writer.Capture{Records: []writer.Record{
			{Type: "response", TargetURI: uri, Date: date, ContentType: "application/http; msgtype=response",
				Block: strings.NewReader(resp), BlockLength: int64(len(resp))},
			{Type: "request", TargetURI: uri, Date: date, ContentType: "application/http; msgtype=request",
				Block: strings.NewReader(req), BlockLength: int64(len(req))},
		}}
	}
	for _, codec := range []warcscan.Codec{warcscan.Gzip, warcscan.Zstd, warcscan.None} {
		t.Run("compression="+codec.Name(), func(t *testing.T) {
			dir := t.TempDir()
			p, err := writer.New(writer.Options{Dir: dir, Compression: codec, Hostname: "test", Workers: 1}, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			for _, c := range []*writer.Capture{
				capture("http://example.com/b", "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Two: 1\r\nx-two: 2\r\n\r\n<title>B</title>"),
				capture("http://example.com/a", "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n\r\ngone"),
			} {
				require.NoError(t, p.Enqueue(context.Background(), c))
			}
			require.NoError(t, p.Close(context.Background()))
			path := warcFiles(t, dir)[0]

			var want bytes.Buffer
			require.NoError(t, cdxj.IndexFile(path, &want))
			data, err := os.ReadFile(path)
			require.NoError(t, err)

			type resp struct{ uri, date, status, ctype, two, body string }
			var lines []string
			var resps []resp
			err = cdxj.Walk(bytes.NewReader(data), "other-name.warc", cdxj.Visitor{
				Line: func(l []byte) error { lines = append(lines, string(l)); return nil },
				Response: func(r *cdxj.Response) error {
					body, err := io.ReadAll(r.Body)
					require.NoError(t, err)
					require.True(t, strings.HasPrefix(r.RecordID, "<urn:uuid:"), r.RecordID)
					resps = append(resps, resp{r.TargetURI, r.Date, r.Status, r.Header("content-type"), r.Header("X-TWO"), string(body)})
					return nil
				},
			})
			require.NoError(t, err)
			slices.Sort(lines)
			require.Equal(t, strings.ReplaceAll(want.String(), `"filename":"`+filepath.Base(path), `"filename":"other-name.warc`), strings.Join(lines, ""))
			require.Equal(t, []resp{
				{"http://example.com/b", "2024-05-06T07:08:09Z", "200", "text/html", "1, 2", "<title>B</title>"},
				{"http://example.com/a", "2024-05-06T07:08:09Z", "404", "text/plain", "", "gone"},
			}, resps)

			stop := fmt.Errorf("stop")
			n := 0
			err = cdxj.Walk(bytes.NewReader(data), "x", cdxj.Visitor{Line: func([]byte) error { n++; return stop }})
			require.ErrorIs(t, err, stop)
			require.Equal(t, 1, n)
		})
	}
}
