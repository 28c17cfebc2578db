package layout

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// TestREADMENamesTheCIPackages: the README's apt-get line, what a
// newcomer runs to have every check run instead of skipped, names every
// Debian package .ci/run installs, so adding one there without saying so
// there fails here.
func TestREADMENamesTheCIPackages(t *testing.T) {
	root := filepath.Join("..", "..")
	run, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^APT_PACKAGES=\(([^)]*)\)$`).FindSubmatch(run)
	if m == nil {
		t.Fatal(".ci/run has no APT_PACKAGES=(...) line")
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^apt-get install .*$`).Find(readme)
	if line == nil {
		t.Fatal("README.md has no line starting with apt-get install")
	}
	named := strings.Fields(string(line))
	for _, p := range strings.Fields(string(m[1])) {
		if !slices.Contains(named, p) {
			t.Errorf("README.md's %q does not name %s, which .ci/run installs", line, p)
		}
	}
}
