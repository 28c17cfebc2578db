package layout

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/warcproxy/warcproxy/"

// pkgs lists the module's packages (without tests) as go list sees them:
// each one's direct imports and all its dependencies.
func pkgs(t *testing.T) (imports, deps map[string][]string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-f",
		`{{.ImportPath}}|{{join .Imports " "}}|{{join .Deps " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports, deps = map[string][]string{}, map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "|")
		name := strings.TrimPrefix(f[0], module)
		imports[name] = ours(f[1])
		deps[name] = ours(f[2])
	}
	return imports, deps
}

// ours keeps the module's own packages, without the module path.
func ours(list string) []string {
	var keep []string
	for _, p := range strings.Fields(list) {
		if strings.HasPrefix(p, module) {
			keep = append(keep, strings.TrimPrefix(p, module))
		}
	}
	return keep
}

// TestImportRules: the stages after the front end never reach back into
// it, the front end leaves the writer, dedup, stats and the crawl log to
// the capture stage, and only the command (and the test helper that starts
// the same wiring) imports the wiring.
func TestImportRules(t *testing.T) {
	imports, deps := pkgs(t)
	for _, pkg := range []string{"proxy", "capture", "wire", "writer", "dedup", "stats", "crawllog", "cdxj", "wacz", "dedupimport", "upload", "internal/app"} {
		if _, ok := imports[pkg]; !ok {
			t.Fatalf("go list did not list %s", pkg)
		}
	}
	never := func(pkg string, forbidden ...string) {
		for _, d := range deps[pkg] {
			if slices.Contains(forbidden, d) {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
	// Backends, the writer and the other leaves: not the front end, not
	// the capture stage, not the wiring.
	for _, leaf := range []string{"writer", "dedup", "stats", "crawllog", "cdxj", "warcproxmeta", "mitm", "jobs",
		"internal/store", "internal/spool", "internal/warcscan", "wsrec"} {
		never(leaf, "proxy", "capture", "wire", "internal/app")
	}
	// The wire client records bytes; what becomes of them is not its
	// business.
	never("wire", "proxy", "capture", "writer", "dedup", "stats", "crawllog", "internal/app")
	never("capture", "proxy", "internal/app")
	// Shipping is the stage after the writer and the indexer, fed by
	// "file closed" hand-offs from the wiring: it knows files, not what
	// wrote them.
	never("upload", "proxy", "capture", "wire", "writer", "dedup", "stats", "crawllog", "cdxj", "internal/app")
	for _, d := range deps["proxy"] {
		if d == "upload" {
			t.Errorf("the front end depends on upload")
		}
	}
	// The WACZ packer reads what was recorded; it runs apart from the
	// proxy and writes no WARC.
	never("wacz", "proxy", "capture", "wire", "writer", "dedup", "stats", "crawllog", "internal/app")
	// dedup import reads archives with the one WARC scanner (through
	// cdxj) and writes through dedup.Store alone, so it follows whatever
	// layout the backends keep: it opens no database of its own.
	never("dedupimport", "proxy", "capture", "wire", "writer", "stats", "crawllog", "wacz", "internal/app")
	if slices.Contains(imports["dedupimport"], "internal/store") {
		t.Errorf("dedupimport imports internal/store: it writes through dedup.Store")
	}
	// The front end hands exchanges to the capture stage, which asks the
	// writer (a warc-prefix's rule, the queue) for it: proxy never imports
	// writer (it depends on it only through capture).
	for _, d := range imports["proxy"] {
		if slices.Contains([]string{"writer", "dedup", "stats", "crawllog", "cdxj", "internal/store", "internal/app"}, d) {
			t.Errorf("the front end imports %s", d)
		}
	}
	// The "did you mean" of every command's flags, config keys and
	// commands: what any command imports, so it imports nothing of ours.
	for _, leaf := range []string{"internal/suggest"} {
		if _, ok := imports[leaf]; !ok {
			t.Fatalf("go list did not list %s", leaf)
		}
		for _, d := range imports[leaf] {
			t.Errorf("%s imports %s; it must import nothing of ours", leaf, d)
		}
	}
	for pkg, list := range imports {
		if slices.Contains(list, "internal/app") && pkg != "cmd/warcproxy" && pkg != "internal/testutil/proxytest" {
			t.Errorf("%s imports the wiring (internal/app)", pkg)
		}
	}
}
