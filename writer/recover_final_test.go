package writer

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/warcscan"
)

func codecOf(gz bool) warcscan.Codec {
	if gz {
		return warcscan.Gzip
	}
	return warcscan.None
}

// TestFinishedTailEveryCut: a file cut at any byte ends on a whole record
// exactly when the cut is at the end of a record, and finishedTail tells
// which from the tail alone.
func TestFinishedTailEveryCut(t *testing.T) {
	for _, gz := range []bool{true, false} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			s := writeSample(t, gz, "http://example.org/", 10, 200)
			for cut := range int64(len(s.data)) + 1 {
				whole, err := finishedTail(bytes.NewReader(s.data[:cut]), cut, codecOf(gz))
				require.NoError(t, err)
				require.Equal(t, slices.Contains(s.ends, cut), whole, "cut at %d", cut)
			}
		})
	}
}

// TestFinishedTailLongRecords: records longer than the search window
// (incompressible, so a gzip member is as long), cut inside them, at their
// ends, and with junk (zeros, as a power cut can leave) after them.
func TestFinishedTailLongRecords(t *testing.T) {
	for _, gz := range []bool{true, false} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			s := writeSample(t, gz, "http://example.org/", 3*tailSearch, 100, 2*tailSearch)
			// Records: 0 warcinfo, 1-2 the long capture, 3-4 the short one,
			// 5-6 the other long one.
			for i, end := range s.ends {
				whole, err := finishedTail(bytes.NewReader(s.data[:end]), end, codecOf(gz))
				require.NoError(t, err)
				require.True(t, whole, "end of record %d", i)
				start := int64(0)
				if i > 0 {
					start = s.ends[i-1]
				}
				for _, cut := range []int64{start + 1, start + (end-start)/2, end - 1} {
					whole, err := finishedTail(bytes.NewReader(s.data[:cut]), cut, codecOf(gz))
					require.NoError(t, err)
					require.False(t, whole, "record %d cut at %d", i, cut)
				}
			}
			junk := cat(s.data, make([]byte, 4096))
			whole, err := finishedTail(bytes.NewReader(junk), int64(len(junk)), codecOf(gz))
			require.NoError(t, err)
			require.False(t, whole, "zeros after the last record")
		})
	}
}

// TestRecoverFinalNames: with FinalNames, files written under their final
// names are checked by their tails: whole ones and locked ones are left
// as they are, unfinished ones are cut back to their last whole record
// and keep their names, ones without a whole record are removed, and
// .open files are recovered as always.
func TestRecoverFinalNames(t *testing.T) {
	s := writeSample(t, true, "http://example.org/", 100, 5000)
	stem := strings.TrimSuffix(s.name, ".warc.gz")
	dir := t.TempDir()
	sub := filepath.Join(dir, "job-a") // --subdir-prefix
	require.NoError(t, os.Mkdir(sub, 0o755))
	write := func(path string, data []byte) string {
		require.NoError(t, os.WriteFile(path, data, 0o644))
		return path
	}
	whole := write(filepath.Join(dir, stem+"-whole.warc.gz"), s.data)
	cut := write(filepath.Join(sub, stem+"-cut.warc.gz"), s.data[:s.ends[3]+20])
	noRecord := write(filepath.Join(dir, stem+"-none.warc.gz"), s.data[:s.ends[0]-3])
	locked := write(filepath.Join(dir, stem+"-locked.warc.gz"), s.data[:s.ends[1]+7])
	openNamed := write(filepath.Join(dir, stem+"-open.warc.gz"+openSuffix), s.data[:s.ends[2]+1])
	other := write(filepath.Join(dir, stem+".cdxj"), []byte("not a warc\n"))
	f, err := os.OpenFile(locked, os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, lockFile(f))
	defer f.Close()

	var logs bytes.Buffer
	rep, err := Recover(dir, slog.New(slog.NewTextHandler(&logs, nil)), RecoverOptions{FinalNames: true})
	require.NoError(t, err)
	require.Equal(t, 5, rep.Found)
	require.Equal(t, 1, rep.Whole)
	require.Equal(t, 1, rep.Skipped)
	require.Equal(t, 2, rep.Recovered)
	require.Equal(t, 1, rep.Removed)
	require.Zero(t, rep.Failed)

	byPath := map[string]RecoveredFile{}
	for _, rf := range rep.Files {
		byPath[rf.Path] = rf
	}
	require.Equal(t, RecoveredFile{Path: cut, NewPath: cut, Records: 4, Size: s.ends[3], Cut: 20}, byPath[cut])
	require.Equal(t, filepath.Join(dir, stem+"-open.warc.gz"), byPath[openNamed].NewPath)
	require.Contains(t, byPath, noRecord)

	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return b
	}
	require.Equal(t, s.data, read(whole), "a whole file is left as it is")
	require.Equal(t, s.data[:s.ends[3]], read(cut), "cut back, same name")
	require.Equal(t, s.data[:s.ends[1]+7], read(locked), "a locked file is left alone")
	require.Equal(t, s.data[:s.ends[2]], read(filepath.Join(dir, stem+"-open.warc.gz")))
	require.NoFileExists(t, noRecord)
	require.NoFileExists(t, openNamed)
	require.FileExists(t, other)
	require.Contains(t, logs.String(), `msg="crash recovery: recovered unfinished warc file" file=`+cut+" records=4")
	require.Contains(t, logs.String(), `msg="crash recovery: warc file left alone, a live process holds its lock" file=`+locked)
	require.NotContains(t, logs.String(), "file="+whole)

	// Without FinalNames, final-named files are never looked at.
	require.NoError(t, os.WriteFile(cut, s.data[:s.ends[3]+20], 0o644))
	rep, err = Recover(dir, testLogger(t), RecoverOptions{})
	require.NoError(t, err)
	require.Zero(t, rep.Found)
	require.Len(t, read(cut), int(s.ends[3]+20))
}

// TestPoolNoOpenSuffix: with NoOpenSuffix a pool writes under the final
// names from the start, holds their locks (a recovery with FinalNames
// leaves them alone while the pool lives), and leaves whole files that a
// later recovery leaves alone too.
func TestPoolNoOpenSuffix(t *testing.T) {
	p, dir := newPool(t, Options{Compression: warcscan.Gzip, Workers: 2, NoOpenSuffix: true})
	tr := newTracker()
	for i := range 10 {
		enqueueAll(t, p, makeCapture(t, captureSpec{uri: fmt.Sprintf("http://example.org/%d", i), bodySize: 1000}, tr))
	}
	tr.wg.Wait()
	live := dirNames(t, dir)
	require.NotEmpty(t, live)
	for _, name := range live {
		require.True(t, strings.HasSuffix(name, ".warc.gz"), "written under its final name: %s", name)
	}
	rep, err := Recover(dir, testLogger(t), RecoverOptions{FinalNames: true})
	require.NoError(t, err)
	require.Equal(t, len(live), rep.Skipped, "the pool's files are locked")
	require.Equal(t, live, dirNames(t, dir))

	closePool(t, p)
	tr.requireAll(t, 10, nil)
	require.Equal(t, live, dirNames(t, dir), "closed under the same names")
	checkFiles(t, dir, 10)
	rep, err = Recover(dir, testLogger(t), RecoverOptions{FinalNames: true})
	require.NoError(t, err)
	require.Equal(t, RecoverReport{Found: len(live), Whole: len(live)}, rep)
}
