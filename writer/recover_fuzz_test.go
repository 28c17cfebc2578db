package writer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http/httpguts"
)

// FuzzRecover feeds arbitrary bytes to Recover as an open .warc.gz or
// .warc file. Recover must not panic or fail, must only cut the file, and
// must keep exactly the longest prefix of whole records that refPrefix, an
// independent in-memory reader (the standard library's gzip), finds.
func FuzzRecover(f *testing.F) {
	addRecoverSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, gz bool) {
		dir := t.TempDir()
		name := "f.warc"
		if gz {
			name += ".gz"
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+openSuffix), data, 0o644))
		rep, err := Recover(dir, nil, RecoverOptions{})
		require.NoError(t, err)
		require.Equal(t, 1, rep.Found)
		require.Zero(t, rep.Failed)
		require.Len(t, rep.Files, 1)

		wantEnd, wantRecords := refPrefix(data, gz)
		got := rep.Files[0]
		require.Equal(t, wantRecords, got.Records)
		require.Equal(t, wantEnd, got.Size)
		require.Equal(t, int64(len(data))-wantEnd, got.Cut)
		if wantRecords == 0 {
			require.Equal(t, 1, rep.Removed)
			require.Empty(t, dirNames(t, dir))
			return
		}
		require.Equal(t, filepath.Join(dir, name), got.NewPath)
		kept, err := os.ReadFile(got.NewPath)
		require.NoError(t, err)
		require.Equal(t, data[:wantEnd], kept)
	})
}

// FuzzScanWARC is FuzzRecover without the files: the scanner alone against
// refPrefix, fast enough to explore the record grammar and gzip framing.
func FuzzScanWARC(f *testing.F) {
	addRecoverSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, gz bool) {
		end, records, stop, err := scanWARC(bytes.NewReader(data), gz)
		require.NoError(t, err)
		wantEnd, wantRecords := refPrefix(data, gz)
		require.Equal(t, wantEnd, end)
		require.Equal(t, wantRecords, records)
		require.Equal(t, end == int64(len(data)), stop == nil, "stop: %v", stop)
	})
}

// addRecoverSeeds adds pool-written files, cut and extended, and a few
// hand-made records as seeds.
func addRecoverSeeds(f *testing.F) {
	gz := writeSample(f, true, "http://example.org/", 10, 3000)
	plain := writeSample(f, false, "http://example.org/", 10, 3000)
	for _, s := range []struct {
		sample
		gz bool
	}{{gz, true}, {plain, false}} {
		f.Add(s.data, s.gz)
		f.Add(s.data[:s.ends[0]], s.gz)
		f.Add(s.data[:s.ends[2]+(s.ends[3]-s.ends[2])/2], s.gz)
		f.Add(cat(s.data, []byte("WARC/1.0\r\n")), s.gz)
	}
	rec := plain.record(1)
	f.Add(gzipped(f, rec), true)
	f.Add(gzipped(f, cat(rec, rec)), true)
	f.Add(bytes.ReplaceAll(rec, []byte("\r\n"), []byte("\n")), false)
	f.Add([]byte("WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:x>\r\nWARC-Date: 2024-01-01T00:00:00Z\r\n"+
		"X-Folded: a\r\n b\r\nContent-Length: 1\r\n\r\nx\r\n\r\n"), false)
	f.Add([]byte{}, true)
}

// refPrefix returns the end of the longest prefix of data made of whole
// records and how many there are, reading all of it in memory. It follows
// the grammar Recover documents on its own, sharing with the scanner only
// isToken and the maxKeptLine limit on the lines it reads values from.
func refPrefix(data []byte, gz bool) (end, records int64) {
	if !gz {
		rest := data
		for len(rest) > 0 {
			n, ok := refRecord(rest)
			if !ok {
				break
			}
			rest = rest[n:]
			records++
		}
		return int64(len(data) - len(rest)), records
	}
	br := bytes.NewReader(data)
	for br.Len() > 0 {
		zr, err := gzip.NewReader(br) // br is an io.ByteReader: no read-ahead
		if err != nil {
			break
		}
		zr.Multistream(false)
		member, err := io.ReadAll(zr)
		if err != nil {
			break
		}
		if n, ok := refRecord(member); !ok || n != len(member) {
			break
		}
		end = int64(len(data) - br.Len())
		records++
	}
	return end, records
}

// refRecord parses the record at the start of p and returns its length.
func refRecord(p []byte) (int, bool) {
	hdrEnd := bytes.Index(p, []byte("\r\n\r\n"))
	if hdrEnd < 0 {
		return 0, false
	}
	lines := bytes.Split(p[:hdrEnd], []byte("\r\n"))
	if v := string(lines[0]); v != "WARC/1.0" && v != "WARC/1.1" {
		return 0, false
	}
	var (
		length               = -1
		typ, id, date, field bool
		lastWasLength        bool
	)
	for _, l := range lines[1:] {
		for _, c := range l {
			if c == '\r' || c == '\n' || (c < 0x20 && c != '\t') || c == 0x7f {
				return 0, false
			}
		}
		if len(l) == 0 {
			return 0, false
		}
		if l[0] == ' ' || l[0] == '\t' {
			if !field || lastWasLength {
				return 0, false
			}
			continue
		}
		name, value, ok := bytes.Cut(l, []byte(":"))
		if !ok || len(name) == 0 || len(name) >= maxKeptLine || !httpguts.ValidHeaderFieldName(string(name)) {
			return 0, false
		}
		field, lastWasLength = true, false
		switch string(bytes.ToLower(name)) {
		case "content-length":
			v := bytes.Trim(value, " \t")
			n, err := strconv.Atoi(string(v))
			if length >= 0 || err != nil || len(l) > maxKeptLine || len(v) > 18 || v[0] < '0' || v[0] > '9' {
				return 0, false
			}
			length, lastWasLength = n, true
		case "warc-type":
			typ = true
		case "warc-record-id":
			id = true
		case "warc-date":
			date = true
		}
	}
	if length < 0 || !typ || !id || !date {
		return 0, false
	}
	start := hdrEnd + 4
	if len(p)-start < length+4 || !bytes.Equal(p[start+length:start+length+4], []byte("\r\n\r\n")) {
		return 0, false
	}
	return start + length + 4, true
}

// TestRefPrefixAgrees: the reference reader reads the pool's own files
// whole, so that FuzzRecover compares against something that works.
func TestRefPrefixAgrees(t *testing.T) {
	for _, gz := range []bool{true, false} {
		s := writeSample(t, gz, "http://example.org/", 10, 3000)
		end, records := refPrefix(s.data, gz)
		require.EqualValues(t, len(s.data), end)
		require.EqualValues(t, len(s.ends), records)
		end, _, stop, err := scanWARC(bufio.NewReader(bytes.NewReader(s.data)), gz)
		require.NoError(t, err)
		require.NoError(t, stop)
		require.EqualValues(t, len(s.data), end)
	}
}
