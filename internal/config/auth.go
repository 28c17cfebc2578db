package config

import (
	"fmt"
	"os"
	"strings"
)

// CheckFiles checks what the configuration names on disk, which Validate
// leaves alone (a deployment's configuration is checked where its files do
// not exist): a missing, unreadable or empty --proxy-auth-file. The
// command runs it after Parse, so that a bad file exits 2 before anything
// is created.
func (c Config) CheckFiles() error {
	if _, err := c.ProxyAuthPairs(); err != nil {
		return fmt.Errorf("--proxy-auth-file: %w", err)
	}
	return nil
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
