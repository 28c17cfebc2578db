package config

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

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
	} else if _, err := c.LoadJobs(); err != nil {
		p.bad("jobs", "%v", err)
	}
	if err := mitm.CheckCAFile(c.CACert); err != nil {
		p.bad("cacert", "%v", err)
	}
	c.checkZstdDictionary(&p)
	if _, err := c.UploadCA(); err != nil {
		p.bad("upload-ca-file", "%v", err)
	}
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
		if f.path == "" {
			continue
		}
		st, err := os.Stat(f.path)
		switch {
		case err == nil && st.IsDir():
			p.bad(f.flag, "%s is a directory", f.path)
		case err == nil && f.flag != "cacert":
			if err := usableDB(f.path, st); err != nil {
				p.bad(f.flag, "%v", err)
			}
		case err != nil:
			if err := creatable(f.path); err != nil {
				p.bad(f.flag, "%v", err)
			}
		}
	}
}

// boltMagic is the magic number of a bbolt file's meta page, after the
// page's 16-byte header, little-endian.
const boltMagic = 0xED0CDAED

// usableDB reports why an existing file cannot be an embedded database:
// bbolt opens it read-write and, when it is empty (as /proc and /sys
// files say they are), writes its first pages into it. So a file on a
// kernel file system, one that is not a regular file, or one with data
// that is not a bbolt database (a WARC, a SQLite file named by mistake)
// is refused here, before anything is created or written.
func usableDB(path string, st os.FileInfo) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if err := notKernelFS(path); err != nil {
		return err
	}
	if st.Size() == 0 {
		return nil // bbolt makes an empty file a database
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var head [20]byte
	if _, err := io.ReadFull(f, head[:]); err != nil || binary.LittleEndian.Uint32(head[16:]) != boltMagic {
		return fmt.Errorf("%s is not an embedded (bbolt) database", path)
	}
	return nil
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
	for missing(err) && filepath.Dir(dir) != dir {
		dir = filepath.Dir(dir)
		st, err = os.Stat(dir)
	}
	switch {
	case missing(err):
		return nil // nothing exists: let the creation say why
	case err != nil:
		// Not "does not exist": a name too long, a loop of symbolic
		// links, a part that cannot be searched; creating it fails too.
		return fmt.Errorf("cannot create %s: %w", path, err)
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

// missing reports a stat error that says the path is not there: it does
// not exist, or a part of it is a file (the walk up then finds that file).
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
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
