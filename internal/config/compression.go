package config

import (
	"errors"
	"fmt"
	"os"

	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// Compression settings: --compression names it; --gzip (-z), warcprox's
// switch, stays as another name for it; each compression has its own level,
// and zstd an optional dictionary.

// DefaultZstdLevel is the zstd command's default level.
const DefaultZstdLevel = 3

var compressions = []string{"gzip", "zstd", "none"}

// optionalBool is a boolean switch that knows whether it was given.
type optionalBool struct{ set, v bool }

// gzipAlias is --gzip (-z): true means compressed (gzip unless --compression
// says zstd), false means --compression none.
type gzipAlias struct{ p *optionalBool }

func (v gzipAlias) Set(s string) error {
	var b bool
	if err := (boolValue{&b}).Set(s); err != nil {
		return err
	}
	*v.p = optionalBool{set: true, v: b}
	return nil
}

// String is empty: the default is --compression's.
func (v gzipAlias) String() string   { return "" }
func (v gzipAlias) IsBoolFlag() bool { return true }

// compressionValue is --compression, which notes that it was given.
type compressionValue struct {
	enumValue
	set *bool
}

func (v compressionValue) Set(s string) error {
	if err := v.enumValue.Set(s); err != nil {
		return err
	}
	*v.set = true
	return nil
}

// resolveCompression applies --gzip to c.Compression once the command line
// and the file are read. The two are one setting (given on the command
// line, neither is read from the file), so both given means both in the
// same place: they must agree.
func (sh *shorthands) resolveCompression(c *Config) error {
	g := sh.gzip
	switch {
	case !g.set:
		return nil
	case !sh.compressionSet && g.v:
		c.Compression = "gzip"
	case !sh.compressionSet:
		c.Compression = "none"
	case g.v && c.Compression == "none":
		return errors.New("--gzip (-z) asks for compression and --compression none for none: give --compression alone (--gzip is its older name: --gzip is gzip, --gzip=false none)")
	case !g.v && c.Compression != "none":
		return fmt.Errorf("--gzip=false asks for no compression and --compression %s for %s: give --compression alone (--gzip is its older name: --gzip is gzip, --gzip=false none)", c.Compression, c.Compression)
	}
	return nil
}

// validateCompression checks the compression, the levels, and that a level
// or dictionary given is for the compression chosen.
func (c Config) validateCompression(p *problems) {
	p.oneOf("compression", c.Compression, compressions)
	if c.GzipLevel < 0 || c.GzipLevel > 9 {
		p.bad("gzip-level", "must be between 1 and 9, or 0 for the default, got %d", c.GzipLevel)
	}
	if c.ZstdLevel < 1 || c.ZstdLevel > 22 {
		p.bad("zstd-level", "must be between 1 and 22 (the zstd command's levels), got %d", c.ZstdLevel)
	}
	if c.GzipLevel != 0 && c.Compression != "gzip" {
		hint := ""
		if c.Compression == "zstd" {
			hint = " (its level is --zstd-level)"
		}
		p.bad("gzip-level", "is for --compression gzip, and the compression is %s%s", c.Compression, hint)
	}
	if c.ZstdLevel != DefaultZstdLevel && c.Compression != "zstd" {
		p.bad("zstd-level", "is for --compression zstd, and the compression is %s", c.Compression)
	}
	if c.ZstdDictionary != "" && c.Compression != "zstd" {
		p.bad("zstd-dictionary", "is for --compression zstd, and the compression is %s", c.Compression)
	}
}

// checkZstdDictionary checks that --zstd-dictionary, if given, is a zstd
// dictionary a .warc.zst file can carry.
func (c Config) checkZstdDictionary(p *problems) {
	if c.ZstdDictionary == "" {
		return
	}
	b, err := c.ZstdDictionaryBytes()
	if err != nil {
		p.bad("zstd-dictionary", "%v", err)
		return
	}
	if _, err := warcscan.ZstdDictionaryID(b); err != nil {
		p.bad("zstd-dictionary", "%s: %v", c.ZstdDictionary, err)
	}
}

// ZstdDictionaryBytes reads --zstd-dictionary (nil when empty).
func (c Config) ZstdDictionaryBytes() ([]byte, error) {
	if c.ZstdDictionary == "" {
		return nil, nil
	}
	return os.ReadFile(c.ZstdDictionary)
}
