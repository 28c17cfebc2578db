package main

import (
	"archive/zip"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/warcscan"
	"github.com/warcproxy/warcproxy/writer"
)

// testWARC writes a small .warc.gz with the proxy's writer into a new
// directory and returns its path.
func testWARC(t *testing.T) string {
	dir := t.TempDir()
	p, err := writer.New(writer.Options{Dir: dir, Compression: warcscan.Gzip, Hostname: "test", Workers: 1}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	resp := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<title>Test page</title>"
	err = p.Enqueue(context.Background(), &writer.Capture{Records: []writer.Record{{
		Type: "response", TargetURI: "http://example.com/", Date: time.Now(),
		ContentType: "application/http; msgtype=response",
		Block:       strings.NewReader(resp), BlockLength: int64(len(resp)),
	}}})
	require.NoError(t, err)
	require.NoError(t, p.Close(context.Background()))
	paths, err := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	require.NoError(t, err)
	require.Len(t, paths, 1)
	return paths[0]
}

// entriesIn lists a zip file's entries.
func entriesIn(t *testing.T, path string) []string {
	zr, err := zip.OpenReader(path)
	require.NoError(t, err)
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	return names
}

// TestWACZCommand runs `warcproxy wacz` as a user does: what it refuses
// (exit 2, before anything is written), what fails mid-way (exit 1,
// nothing left behind), and what it packs (exit 0).
func TestWACZCommand(t *testing.T) {
	good := testWARC(t)
	data, err := os.ReadFile(good)
	require.NoError(t, err)
	in := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(in, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
		return p
	}
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	text := write("notes.warc", []byte("just some notes\n"))
	zst := write("crawl.warc.zst", enc.EncodeAll(data, nil))
	zstAsGz := write("disguised.warc.gz", enc.EncodeAll(data, nil))
	plainAsGz := write("plain.warc.gz", []byte("WARC/1.0\r\n"))
	txt := write("crawl.txt", data)
	open := write("crawl.warc.gz.open", data)
	empty := write("empty.warc", nil)
	twin := write("twin/"+filepath.Base(good), data)
	truncated := write("truncated.warc.gz", data[:len(data)-10])
	junkTail := write("junk.warc.gz", append(append([]byte{}, data...), "trailing junk"...))

	tests := []struct {
		name     string
		args     []string // OUT stands for the output path
		code     int
		out      string
		existing bool // OUT exists before the run
	}{
		{"help", []string{"--help"}, 0, "Usage: warcproxy wacz --output FILE.wacz", false},
		{"no output", []string{good}, 2, "--output FILE.wacz is required", false},
		{"no WARC", []string{"--output", "OUT"}, 2, "no WARC files given", false},
		{"unknown flag", []string{"--output", "OUT", "--gzip", good}, 2, "warcproxy wacz: unknown flag --gzip\nRun warcproxy wacz --help for usage.\n", false},
		{"bad pages-from", []string{"--output", "OUT", "--pages-from", "all", good}, 2, `--pages-from "all": want html or none`, false},
		{"output not .wacz", []string{"--output", filepath.Join(t.TempDir(), "out.zip"), good}, 2, "the name must end in .wacz", false},
		{"output dir missing", []string{"--output", "/nonexistent/dir/out.wacz", good}, 2, "no directory /nonexistent/dir", false},
		{"missing input", []string{"--output", "OUT", good, "/nonexistent.warc.gz"}, 2, "/nonexistent.warc.gz: no such file or directory", false},
		{"text named .warc", []string{"--output", "OUT", good, text}, 2, text + `: not a WARC file: it starts with "just som"`, false},
		{"not a WARC name", []string{"--output", "OUT", txt}, 2, txt + ": not a WARC file name", false},
		{"open file", []string{"--output", "OUT", open}, 2, open + ": still being written", false},
		{"empty file", []string{"--output", "OUT", empty}, 2, empty + ": not a WARC file: it is empty", false},
		{"zstd file", []string{"--output", "OUT", good, zst}, 2, zst + ": a zstd-compressed WARC; no WACZ reader reads zstd yet", false},
		{"zstd named .warc.gz", []string{"--output", "OUT", zstAsGz}, 2, zstAsGz + ": zstd-compressed, whatever its name says", false},
		{"plain named .warc.gz", []string{"--output", "OUT", plainAsGz}, 2, plainAsGz + ": named .warc.gz but not compressed", false},
		{"same base name", []string{"--output", "OUT", good, twin}, 2, "have the same name", false},
		{"same file twice", []string{"--output", "OUT", good, good}, 2, good + " is given twice", false},
		{"pattern that matched nothing", []string{"--output", "OUT", filepath.Join(in, "*.warc.gz")}, 2, "*.warc.gz: no file matches this pattern (are the WARCs still being written, named .open?)", false},
		{"output exists", []string{"--output", "OUT", good}, 2, "exists; --force replaces it", true},
		{"truncated record", []string{"--output", "OUT", good, truncated}, 1, truncated + ": not a whole warc record at offset ", false},
		{"junk after the records", []string{"--output", "OUT", junkTail}, 1, junkTail + ": not a whole warc record at offset " + strconv.Itoa(len(data)), false},
		{"packs", []string{good, "--output", "OUT", "--title", "My crawl"}, 0, "wrote OUT: 1 WARC file, 1 index line, 1 page", false},
		{"replaces with --force", []string{"-o", "OUT", "--force", "--compressed-index", "--pages-from", "none", "--", good}, 0, "0 pages", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outDir := t.TempDir()
			out := filepath.Join(outDir, "crawl.wacz")
			if tt.existing {
				require.NoError(t, os.WriteFile(out, []byte("old"), 0o644))
			}
			args := []string{"wacz"}
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "OUT", out))
			}
			code, output := runMain(t, args...)
			require.Equal(t, tt.code, code, output)
			require.Contains(t, output, strings.ReplaceAll(tt.out, "OUT", out))
			left, err := os.ReadDir(outDir)
			require.NoError(t, err)
			switch {
			case tt.code == 0 && tt.args[0] != "--help":
				require.Len(t, left, 1, "the package and nothing else")
				require.Contains(t, entriesIn(t, out), "archive/"+filepath.Base(good))
			case tt.existing:
				require.Len(t, left, 1, "nothing but the old file")
				old, err := os.ReadFile(out)
				require.NoError(t, err)
				require.Equal(t, "old", string(old))
			default:
				require.Empty(t, left, "a refused or failed run leaves nothing")
			}
		})
	}
}
