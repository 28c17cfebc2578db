// Package warccheck verifies the WARC files a test wrote, with two
// independent readers, and returns their records for further assertions.
//
// Every file is read twice (a .warc.zst file after Debian's zstd command
// has decompressed it and its frame layout has been checked against the
// WARC-zstd spec: see zstd.go):
//   - by gowarc v3's strict reader, with block and payload digests validated
//     (see gowarcOptions), walking gzip members one at a time so that a
//     member holding more than one record is caught;
//   - by webrecorder's warcio.js through internal/testutil/warcio/verify.mjs,
//     which recomputes every block and payload digest itself.
//
// A payload digest is taken over the HTTP body with Transfer-Encoding:
// chunked undone and Content-Encoding kept (the design's WARC contract).
// gowarc hashes the body as stored, chunk framing included, so for chunked
// messages this package replaces gowarc's payload check with its own.
//
// The warcio.js half needs node and `npm ci --prefix
// internal/testutil/warcio`. Without them it is skipped with a log line,
// unless CI=true, where that is a test failure.
package warccheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Record is one WARC record as read back from a file.
type Record struct {
	File      string // base name of the file
	Offset    int64  // offset of the record in the file (of its gzip member or zstd frame in a .gz or .zst file)
	Type      string // WARC-Type
	ID        string // WARC-Record-ID (with <>)
	TargetURI string
	Date      time.Time
	// Header holds every WARC header field, keyed by the name exactly as
	// written in the file (a writer following the spec writes the canonical
	// spelling, e.g. "WARC-Concurrent-To", "WARC-IP-Address"); if a field is
	// repeated, the last one wins.
	Header    map[string]string
	Block     []byte // the whole block if <= 1 MiB, else nil
	BlockLen  int64
	BlockSHA1 string // hex sha1 of the whole block, always set
}

// maxKeptBlock is the largest block kept in Record.Block.
const maxKeptBlock = 1 << 20

// Dir verifies every WARC (*.warc, *.warc.gz, *.warc.zst, recursively) in dir and
// returns all records in file-name then offset order. It fails the test on:
// any file still ending in .open; a parse or validation error from gowarc's
// strict reader with block and payload digest validation; a file whose first
// record is not warcinfo; a .gz file whose gzip members, or a .zst file
// whose zstd frames, are not exactly one per record; any problem found by the warcio.js check, or a warcio.js
// reading that disagrees with gowarc's.
//
// Each problem is reported with t.Errorf; if there was any, Dir ends the
// test with t.Fatalf, so the records it returns are always from good files.
// A dir that does not exist holds no records: a proxy that wrote nothing
// removes at shutdown the empty --dir it created.
func Dir(t testing.TB, dir string) []Record {
	t.Helper()
	paths, others, err := scanDir(dir)
	if err != nil {
		t.Fatalf("warccheck: %v", err)
	}
	n := 0
	for _, p := range others {
		t.Errorf("warccheck: %s: file is still open (name ends in .open)", p)
		n++
	}
	recs, problems := check(t, paths, false)
	if n += problems; n > 0 {
		t.Fatalf("warccheck: %d problem(s) in the WARC files under %s", n, dir)
	}
	return recs
}

// Files does what Dir does for the given files, in the order given. Names
// ending in .open are accepted (and read as what they will be renamed to),
// so a test can check a file before it is closed.
func Files(t testing.TB, paths ...string) []Record {
	t.Helper()
	if len(paths) == 0 {
		t.Fatalf("warccheck.Files: no files given")
	}
	recs, problems := check(t, paths, true)
	if problems > 0 {
		t.Fatalf("warccheck: %d problem(s) in %s", problems, strings.Join(paths, ", "))
	}
	return recs
}

// check runs both readers over paths, compares what they saw and returns
// gowarc's records and the number of problems reported.
func check(t testing.TB, paths []string, allowOpen bool) ([]Record, int) {
	t.Helper()
	zr := &reporter{t: t, prefix: "warccheck (zstd)"}
	zst, readAs := map[string]*zstdFile{}, map[string]string{}
	tmp := ""
	for _, p := range paths {
		if !isZstdName(p) {
			continue
		}
		if tmp == "" {
			var err error
			if tmp, err = os.MkdirTemp("", "warccheck-zstd-"); err != nil {
				t.Fatalf("warccheck: %v", err)
			}
			defer os.RemoveAll(tmp)
		}
		dir := filepath.Join(tmp, strconv.Itoa(len(zst))) // paths in different directories may share a base name
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatalf("warccheck: %v", err)
		}
		if zst[p] = openZstd(zr, p, dir); zst[p] != nil {
			readAs[p] = zst[p].plain
		}
	}
	gr := &reporter{t: t, prefix: "warccheck (gowarc)"}
	byFile, failed := checkGowarcFiles(gr, paths, allowOpen, zst)
	wr := &reporter{t: t, prefix: "warccheck (warcio.js)"}
	files, ran := checkWarcio(wr, paths, allowOpen, readAs)
	cr := &reporter{t: t, prefix: "warccheck (gowarc vs warcio.js)"}
	if ran {
		compare(cr, paths, byFile, failed, files, zst)
	}
	var recs []Record
	for _, p := range paths {
		recs = append(recs, byFile[p]...)
	}
	return recs, zr.n + gr.n + wr.n + cr.n
}

// reporter counts the problems it reports, so that Dir and Files know
// whether their own checks failed whatever state the test was in before.
type reporter struct {
	t      testing.TB
	prefix string
	n      int
}

func (r *reporter) errorf(format string, args ...any) {
	r.t.Helper()
	r.n++
	r.t.Errorf("%s: %s", r.prefix, fmt.Sprintf(format, args...))
}

// isWARCName reports whether name is a WARC file name, open or closed.
func isWARCName(name string) bool {
	name = strings.TrimSuffix(name, ".open")
	return strings.HasSuffix(name, ".warc") || strings.HasSuffix(name, ".warc.gz") || strings.HasSuffix(name, ".warc.zst")
}

// scanDir lists the WARC files under dir, sorted by base name, and the other
// files whose name ends in .open. Open WARC files are in the first list, so
// that they are read (and reported) by both readers too.
func scanDir(dir string) (warcs, otherOpen []string, err error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		name := d.Name()
		switch {
		case isWARCName(name):
			warcs = append(warcs, path)
		case strings.HasSuffix(name, ".open"):
			otherOpen = append(otherOpen, path)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("listing WARC files: %w", err)
	}
	sort.SliceStable(warcs, func(i, j int) bool {
		bi, bj := filepath.Base(warcs[i]), filepath.Base(warcs[j])
		if bi != bj {
			return bi < bj
		}
		return warcs[i] < warcs[j]
	})
	return warcs, otherOpen, nil
}

// compare reports where warcio.js and gowarc read a file differently. Files
// that either reader found broken are skipped: their problems are reported
// already, and a reader that stopped early disagrees on every count.
func compare(r *reporter, paths []string, byFile map[string][]Record, failed map[string]bool, files map[string]warcioFile, zst map[string]*zstdFile) {
	r.t.Helper()
	for _, p := range paths {
		wf, ok := files[p]
		if !ok {
			r.errorf("%s: missing from verify.mjs output", p)
			continue
		}
		if failed[p] || len(wf.Problems) > 0 {
			continue
		}
		g := byFile[p]
		if len(g) != len(wf.Records) {
			r.errorf("%s: gowarc read %d records, warcio.js %d", p, len(g), len(wf.Records))
			continue
		}
		for i, w := range wf.Records {
			if z := zst[p]; z != nil {
				w.Offset = z.fileOffset(w.Offset) // warcio.js read the decompressed file
			}
			if g[i].Type != w.Type || g[i].ID != w.ID || g[i].Offset != w.Offset || g[i].TargetURI != w.TargetURI || g[i].BlockLen != w.Length {
				r.errorf("%s: record %d: gowarc read %s %s at %d (%q, %d bytes), warcio.js %s %s at %d (%q, %d bytes)",
					p, i, g[i].Type, g[i].ID, g[i].Offset, g[i].TargetURI, g[i].BlockLen, w.Type, w.ID, w.Offset, w.TargetURI, w.Length)
			}
		}
	}
}

// envCI reports whether the tests run in CI, where skipping a check fails.
func envCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}
