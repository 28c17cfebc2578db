package wire

import (
	"testing"

	"github.com/warcproxy/warcproxy/internal/digest"
	"github.com/warcproxy/warcproxy/internal/spool"
)

// TestCloseReleasesHashLanes: a recording large enough to hash off its
// goroutine gives its lane back when it is closed, whether or not its
// digest was taken (an exchange not archived, abandoned or re-recorded),
// so the next huge download is not left hashing inline.
func TestCloseReleasesHashLanes(t *testing.T) {
	s, err := spool.New(t.TempDir(), 1<<20, 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	lanes := digest.NewLanes(2)
	p := make([]byte, 64<<10)
	var recs []*Recorder
	for range 2 {
		r := NewRecorder(s, digest.SHA1, lanes)
		for range 48 { // 3 MiB
			_, _ = r.Write(p)
		}
		recs = append(recs, r)
	}
	if lanes.InUse() != 2 {
		t.Fatalf("%d lanes taken by two 3 MiB recordings, want 2", lanes.InUse())
	}
	for _, r := range recs {
		r.Close()
	}
	if n := lanes.InUse(); n != 0 {
		t.Fatalf("%d lanes in use after Close, want 0", n)
	}
}
