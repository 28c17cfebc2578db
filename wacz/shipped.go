package wacz

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/warcproxy/warcproxy/upload"
)

// shippedHint says where the WARC at a missing path went, when the proxy
// shipped it to object storage (--upload-to) and removed it here: the
// upload states under --dir say so. "" when they do not.
func shippedHint(path string) string {
	dir, states := findStates(filepath.Dir(path))
	if dir == "" {
		return ""
	}
	name := filepath.Base(path)
	var warcs int
	var where string
	for _, st := range states {
		if st.Kind != upload.KindWARC {
			continue
		}
		warcs++
		if filepath.Base(st.Path) == name {
			return fmt.Sprintf("it was shipped to %s on %s and removed here (--upload-to); download it to pack it",
				st.URL, st.Shipped.Format("2006-01-02 15:04 UTC"))
		}
		where = st.Target
	}
	if warcs == 0 {
		return ""
	}
	return fmt.Sprintf("%d WARC %s from %s %s shipped to %s and removed here (--upload-to; their states are in %s): download them to pack them",
		warcs, plural(warcs, "file", "files"), dir, plural(warcs, "was", "were"), where, filepath.Join(dir, upload.StateDir))
}

// findStates looks for the upload states in dir and up to two folders
// above it (a --subdir-prefix folder is under --dir).
func findStates(dir string) (string, []upload.State) {
	for range 3 {
		if fi, err := os.Stat(filepath.Join(dir, upload.StateDir)); err == nil && fi.IsDir() {
			states, _ := upload.Shipped(dir)
			return dir, states
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
