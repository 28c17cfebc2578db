package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/warcproxy/warcproxy/mitm"
)

// CheckFiles checks what the configuration names on disk, which Validate
// leaves alone (a deployment's configuration is checked where its files do
// not exist): the proxy-auth file, the CA file if it exists, the zstd
// dictionary, and that the directories the proxy would create are not
// files. The command runs
// it after Parse, so that such a mistake exits 2 before anything is
// created.
func (c Config) CheckFiles() error {
	var p problems
	if _, err := c.ProxyAuthPairs(); err != nil {
		p.bad("proxy-auth-file", "%v", err)
	}
	if err := mitm.CheckCAFile(c.CACert); err != nil {
		p.bad("cacert", "%v", err)
	}
	c.checkZstdDictionary(&p)
	for _, d := range []struct{ flag, path string }{
		{"dir", c.Dir}, {"tmp-dir", c.TmpDir}, {"certs-dir", c.CertsDir}, {"crawl-log-dir", c.CrawlLogDir},
	} {
		if d.path == "" {
			continue
		}
		if st, err := os.Stat(d.path); err == nil && !st.IsDir() {
			p.bad(d.flag, "%s exists and is not a directory", d.path)
		}
	}
	return errors.Join(p...)
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
