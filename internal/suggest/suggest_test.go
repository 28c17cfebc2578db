package suggest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFind(t *testing.T) {
	cands := []Candidate{
		{Name: "port", Say: "--port", Key: "port"},
		{Name: "pprof", Say: "--pprof", Key: "pprof"},
		{Name: "max-conns", Say: "--max-conns", Key: "max-conns"},
		{Name: "max-threads", Say: "--max-threads", Key: "max-conns"},
		{Name: "max-open-warcs", Say: "--max-open-warcs", Key: "max-open-warcs"},
		{Name: "rollover-idle-time", Say: "--rollover-idle-time", Key: "rollover-idle-time"},
	}
	for _, tt := range []struct {
		typed string
		want  []string
		match Match
	}{
		{"Port", []string{"--port"}, SameName},
		{"MAX_THREADS", []string{"--max-threads"}, SameName},
		{"porr", []string{"--port"}, Near},
		{"max-thraeds", []string{"--max-threads"}, Near},
		{"max-thread", []string{"--max-threads"}, StartOf},
		{"rollover-idle", []string{"--rollover-idle-time"}, StartOf},
		{"max", []string{"--max-conns", "--max-open-warcs"}, StartOf}, // max-threads is max-conns: once
		{"p", nil, None},  // one letter: no start, and too short to be near
		{"pq", nil, None}, // two edits from port, but only two letters
		{"xyzzy", nil, None},
	} {
		t.Run(tt.typed, func(t *testing.T) {
			got, match := Find(tt.typed, cands)
			if diff := cmp.Diff(tt.want, got); diff != "" || match != tt.match {
				t.Fatalf("Find(%q) = %q, %d; want %q, %d", tt.typed, got, match, tt.want, tt.match)
			}
		})
	}
}

func TestNames(t *testing.T) {
	commands := []string{"origin", "run", "sweep", "soak"}
	for _, tt := range []struct {
		typed string
		want  []string
	}{
		{"swep", []string{"sweep"}},
		{"so", []string{"soak"}},
		{"SOAK", []string{"soak"}},
		{"bench", nil},
	} {
		t.Run(tt.typed, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Names(tt.typed, commands)); diff != "" {
				t.Fatalf("Names(%q) (-want +got):\n%s", tt.typed, diff)
			}
		})
	}
}
