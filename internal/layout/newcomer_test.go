package layout

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsNameTheGoVersion: the README and the quickstart, what a newcomer
// reads before the first `make`, name the Go that go.mod asks for, so that
// raising it there without saying so there fails here.
func TestDocsNameTheGoVersion(t *testing.T) {
	root := filepath.Join("..", "..")
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	want := "Go " + string(m[1])
	for _, doc := range []string{"README.md", filepath.Join("docs", "quickstart.md")} {
		text, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(text), want) {
			t.Errorf("%s does not say that it builds with %s (go.mod's go line)", doc, want)
		}
	}
}
