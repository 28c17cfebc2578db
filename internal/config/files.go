package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/mitm"
)

// CheckFiles checks what the configuration names on disk, which Validate
// leaves alone (a deployment's configuration is checked where its files do
// not exist): the proxy-auth file, the CA file if it exists, the zstd
// dictionary, and that the directories, embedded databases and CA file
// the proxy would create or write to can be (an existing --certs-dir may
// be read-only). The command runs it after Parse, so that such a mistake
// exits 2 before anything is created.
func (c Config) CheckFiles() error {
	var p problems
	if _, err := c.ProxyAuthPairs(); err != nil {
		p.bad("proxy-auth-file", "%v", err)
	}
	if err := mitm.CheckCAFile(c.CACert); err != nil {
		p.bad("cacert", "%v", err)
	}
	c.checkZstdDictionary(&p)
	c.checkDirs(&p)
	c.checkFilesToCreate(&p)
	return errors.Join(p...)
}

// checkDirs checks that the directories the proxy writes to are, or can
// be made.
func (c Config) checkDirs(p *problems) {
	for _, d := range []struct{ flag, path string }{
		{"dir", c.Dir}, {"tmp-dir", c.TmpDir}, {"certs-dir", c.CertsDir}, {"crawl-log-dir", c.CrawlLogDir},
	} {
		if d.path == "" {
			continue
		}
		st, err := os.Stat(d.path)
		switch {
		case err == nil && !st.IsDir():
			p.bad(d.flag, "%s exists and is not a directory", d.path)
		case err == nil && d.flag == "certs-dir":
			// Leaf certificates are only cached there, and one that
			// cannot be saved is logged: a read-only directory of them
			// (a shared mount) is used as it is, but not /proc or /sys.
			if err := notKernelFS(d.path); err != nil {
				p.bad(d.flag, "%v", err)
			}
		default:
			if err := creatable(d.path); err != nil {
				p.bad(d.flag, "%v", err)
			}
		}
	}
}

// checkFilesToCreate checks that the embedded databases and a CA file
// still to be made can be created, with their parent directories (an
// existing CA file is checked by CheckCAFile).
func (c Config) checkFilesToCreate(p *problems) {
	files := []struct{ flag, path string }{{"dedup-db", c.embeddedPath(c.DedupDB)}}
	if stats := c.embeddedPath(c.StatsDB); stats != files[0].path {
		files = append(files, struct{ flag, path string }{"stats-db", stats})
	}
	if _, err := os.Stat(c.CACert); err != nil {
		files = append(files, struct{ flag, path string }{"cacert", c.CACert})
	}
	for _, f := range files {
		if st, err := os.Stat(f.path); f.path == "" || err == nil && !st.IsDir() {
			continue
		} else if err == nil {
			p.bad(f.flag, "%s is a directory", f.path)
		} else if err := creatable(f.path); err != nil {
			p.bad(f.flag, "%v", err)
		}
	}
}

// embeddedPath is the bbolt file of an embedded: store spec, or "".
func (c Config) embeddedPath(spec string) string {
	if s, err := store.Parse(spec); err == nil && s.Kind == store.Embedded {
		return s.Path
	}
	return ""
}

// creatable reports why path could not be created, or written to if it is
// an existing directory: the nearest part of it that exists is a file, a
// directory on a kernel file system (/proc, /sys: root passes the access
// check there), or a directory the process may not write to.
func creatable(path string) error {
	dir := path
	st, err := os.Stat(dir)
	for err != nil && filepath.Dir(dir) != dir {
		dir = filepath.Dir(dir)
		st, err = os.Stat(dir)
	}
	switch {
	case err != nil:
		return nil // nothing exists: let the creation say why
	case !st.IsDir():
		return fmt.Errorf("cannot create %s: %s is not a directory", path, dir)
	}
	err = notKernelFS(dir)
	if err == nil {
		if werr := writable(dir); werr != nil {
			err = fmt.Errorf("%s is not writable: %w", dir, werr)
		}
	}
	if err != nil && dir != path {
		return fmt.Errorf("cannot create %s: %w", path, err)
	}
	return err
}

// ProxyAuthPairs returns the accepted user:password pairs of --proxy-auth
// and --proxy-auth-file.
func (c Config) ProxyAuthPairs() ([]string, error) {
	var pairs []string
	if c.ProxyAuth != "" {
		pairs = append(pairs, c.ProxyAuth)
	}
	if c.ProxyAuthFile == "" {
		return pairs, nil
	}
	data, err := os.ReadFile(c.ProxyAuthFile)
	if err != nil {
		return nil, err
	}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.Contains(line, ":") {
			return nil, fmt.Errorf("%s line %d: want user:password", c.ProxyAuthFile, i+1)
		}
		pairs = append(pairs, line)
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("%s: no user:password lines", c.ProxyAuthFile)
	}
	return pairs, nil
}
