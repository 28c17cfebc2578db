package writer

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestStoredGzip: members of stored blocks read back whole with Go's own
// gzip reader (not the klauspost one the writer uses elsewhere) and with
// the gzip CLI, whatever the sizes of the writes, at and around the
// stored-block limit, and several members in a row, as in a WARC file.
func TestStoredGzip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var file, want bytes.Buffer
	var s storedGzip
	for _, size := range []int{0, 1, maxStored - 1, maxStored, maxStored + 1, 3*maxStored + 17, 1 << 20} {
		body := make([]byte, size)
		for i := range body {
			body[i] = byte(rng.Uint32())
		}
		var member bytes.Buffer
		s.Reset(&member)
		for p := body; len(p) > 0; {
			n := min(len(p), 1+rng.IntN(100000))
			if _, err := s.Write(p[:n]); err != nil {
				t.Fatal(err)
			}
			p = p[n:]
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		br := bytes.NewReader(member.Bytes())
		zr, err := gzip.NewReader(br)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		zr.Multistream(false) // exactly one member, and nothing after it
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("size %d: read back %d bytes, err %v", size, len(got), err)
		}
		if br.Len() != 0 { // a bytes.Reader is read no further than the member
			t.Fatalf("size %d: %d bytes after the member", size, br.Len())
		}
		file.Write(member.Bytes())
		want.Write(body)
	}
	gz, err := exec.LookPath("gzip")
	if err != nil {
		t.Skip("no gzip CLI")
	}
	path := filepath.Join(t.TempDir(), "members.gz")
	if err := os.WriteFile(path, file.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gz, "-dc", path).Output()
	if err != nil || !bytes.Equal(out, want.Bytes()) {
		t.Fatalf("gzip -dc: %d bytes, err %v", len(out), err)
	}
}
