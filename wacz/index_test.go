package wacz_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/cdxj"
	"github.com/warcproxy/warcproxy/wacz"
)

// gunzip decompresses p with Debian's gzip; p must be whole gzip members.
func gunzip(t *testing.T, p []byte) []byte {
	var out, stderr bytes.Buffer
	cmd := exec.Command(needTool(t, "gzip", "gzip"), "-dc")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(p), &out, &stderr
	require.NoError(t, cmd.Run(), "gzip -dc: %s", stderr.String())
	return out.Bytes()
}

// linesPerBlock is how many index lines a block of index.cdx.gz holds.
const linesPerBlock = 3000

// TestPackIndexForms packs a WARC with more index lines than fit in the
// sorter's memory and than a block of the compressed index holds: the
// index is IndexFile's, whatever the memory; the compressed index is the
// same lines in blocks that each gunzip alone at the offsets index.idx
// gives.
func TestPackIndexForms(t *testing.T) {
	const captures = linesPerBlock + 200
	warc := generateWARC(t, t.TempDir(), false, captures, 100)
	var want bytes.Buffer
	require.NoError(t, cdxj.IndexFile(warc, &want))
	require.Equal(t, captures, bytes.Count(want.Bytes(), []byte("\n")))

	// About 150 runs of sorted lines: more than are merged at once.
	out := filepath.Join(t.TempDir(), "plain.wacz")
	sum, err := wacz.Pack(context.Background(), []string{warc}, wacz.Options{Output: out, IndexMemory: 4 << 10, Pages: wacz.PagesNone})
	require.NoError(t, err)
	require.EqualValues(t, captures, sum.IndexLines)
	dir, _ := checkPackage(t, out, []string{warc})
	got, err := os.ReadFile(filepath.Join(dir, "indexes", "index.cdxj"))
	require.NoError(t, err)
	require.Equal(t, want.String(), string(got), "the index sorted in runs")

	// Sorted in memory, in blocks.
	out = filepath.Join(t.TempDir(), "compressed.wacz")
	_, err = wacz.Pack(context.Background(), []string{warc}, wacz.Options{Output: out, CompressedIndex: true, Pages: wacz.PagesNone})
	require.NoError(t, err)
	entries := zipEntries(t, out)
	require.NotContains(t, entries, "indexes/index.cdxj", "one index only: a reader loads every index it finds")
	dir, _ = checkPackage(t, out, []string{warc})
	cdxGz, err := os.ReadFile(filepath.Join(dir, "indexes", "index.cdx.gz"))
	require.NoError(t, err)
	idx, err := os.ReadFile(filepath.Join(dir, "indexes", "index.idx"))
	require.NoError(t, err)

	idxLines := strings.Split(strings.TrimSuffix(string(idx), "\n"), "\n")
	require.Equal(t, `!meta 0 {"format": "cdxj-gzip-1.0", "filename": "index.cdx.gz"}`, idxLines[0])
	var all bytes.Buffer
	end := int64(0)
	for i, l := range idxLines[1:] {
		key, js, ok := strings.Cut(l, " {")
		require.True(t, ok, l)
		var block struct {
			Offset, Length int64
			Filename       string
		}
		require.NoError(t, json.Unmarshal([]byte("{"+js), &block), l)
		require.Equal(t, "index.cdx.gz", block.Filename)
		require.Equal(t, end, block.Offset, "blocks follow each other")
		end = block.Offset + block.Length
		lines := gunzip(t, cdxGz[block.Offset:end])
		n := bytes.Count(lines, []byte("\n"))
		if i < len(idxLines)-2 {
			require.Equal(t, linesPerBlock, n, "block %d", i)
		} else {
			require.Equal(t, 200, n, "the last block")
		}
		urlkey, rest, _ := strings.Cut(string(lines), " ")
		ts, _, _ := strings.Cut(rest, " ")
		require.Equal(t, urlkey+" "+ts, key, "block %d's key is its first line's", i)
		all.Write(lines)
	}
	require.Len(t, idxLines, 1+2)
	require.EqualValues(t, len(cdxGz), end)
	require.Equal(t, want.String(), all.String(), "the blocks hold the index")
}
