package redistest

import (
	"strings"
	"testing"
)

func TestServerAnswers(t *testing.T) {
	u := URL(t)
	if !strings.HasPrefix(u, "redis://127.0.0.1:") || !strings.Contains(u, "?prefix=test-") {
		t.Fatalf("URL = %q", u)
	}
	addr := strings.TrimPrefix(strings.SplitN(u, "/0?", 2)[0], "redis://")
	if err := ping(addr); err != nil {
		t.Fatal(err)
	}
	if u2 := URL(t); u2 == u {
		t.Fatal("two URLs share a key prefix")
	}
}
