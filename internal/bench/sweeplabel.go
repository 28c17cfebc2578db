package bench

import (
	"strconv"
	"strings"
)

// labeler makes the compact setting strings: a dimension appears when the
// sweep varies it or its one value is not the default.
type labeler struct{ cfg *SweepConfig }

func (l labeler) show(key string, n int, v string) bool {
	return n > 1 || l.cfg.Defaults[key] != v
}

func (l labeler) label(kind string, g loadGroup, ps *proxySetting) string {
	c := l.cfg
	var parts []string
	add := func(key string, n int, v string) {
		if l.show(key, n, v) {
			parts = append(parts, key+"="+v)
		}
	}
	switch kind {
	case KindDirect:
		parts = append(parts, "direct")
	case KindNoWARC:
		parts = append(parts, "prefix=-")
		add("conns", len(c.MaxConns), strconv.Itoa(ps.maxConns))
	case KindProxy:
		add("conns", len(c.MaxConns), strconv.Itoa(ps.maxConns))
		add("workers", len(c.WriterWorkers), strconv.Itoa(ps.workers))
		add("compression", len(c.Compression), ps.compression)
		switch ps.compression {
		case "gzip":
			add("level", len(c.GzipLevel), strconv.Itoa(ps.level))
		case "zstd":
			add("zstd-level", len(c.ZstdLevel), strconv.Itoa(ps.level))
		}
	}
	if c.Path == "" {
		add("size", len(c.Size), g.size)
	}
	add("text", len(c.Text), strconv.FormatBool(g.text))
	add("mode", len(c.Mode), g.mode)
	add("tls", len(c.TLS), strconv.FormatBool(g.tls))
	add("c", len(c.Concurrency), strconv.Itoa(g.concurrency))
	if len(parts) == 0 {
		return "proxy"
	}
	return strings.Join(parts, " ")
}
