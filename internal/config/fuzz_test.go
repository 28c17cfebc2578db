package config

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

// FuzzParse feeds command lines (arguments separated by newlines) and
// config files to Parse: it must not panic, and whatever it accepts must
// validate.
func FuzzParse(f *testing.F) {
	seeds := []struct{ args, yaml string }{
		{"", ""},
		{"--port\n8000\n--dir\n/tmp/w\n-z\n--prefix\ncrawl1\n--rollover-idle-time\n300\n--max-threads\n200", ""},
		{"-p\n0\n-s\n1GB\n--method-filter\nGET\n--method-filter\nPOST\n-v", ""},
		{"--gzip\nfalse", ""},
		{"--size=10k\n--socket-timeout=0.5", ""},
		{"-h", ""},
		{"--version", ""},
		{"-zv\n-p8000\n-zvp8000\n-d/tmp/w", ""},
		{"--max-thread\n10\n--rollover-idle\n60\n--dedup\nnone", ""},
		{"--port\n9100", "port: 9000\nmethod-filter: [GET, POST]\nsocket-timeout: 30\n"},
		{"-q", "log-level: error\nrollover-size: 2 GB\nidle-timeout: &t 45s\nheader-timeout: *t\n"},
		{"", "max_conns: 5\n"},
		{"", "prefix: \"-\"\nwarc-filename: \"{prefix}-{{x}}-{serialno}\"\n"},
		{"", "- a\n- b\n"},
		{"", "port: 1\n---\nport: 2\n"},
	}
	for _, s := range seeds {
		f.Add(s.args, []byte(s.yaml))
	}
	f.Fuzz(func(t *testing.T, argText string, yaml []byte) {
		var args []string
		if argText != "" {
			args = strings.Split(argText, "\n")
		}
		if len(yaml) > 0 {
			args = append(args, "--config.file", "fuzz.yaml")
		}
		c, err := parse(args, io.Discard, func(string) ([]byte, error) { return yaml, nil })
		if errors.Is(err, flag.ErrHelp) && !asksForHelp(args) {
			t.Fatalf("Parse(%q) returned flag.ErrHelp", args)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("empty error message for %q", args)
			}
			return
		}
		if c.ShowVersion {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse(%q) accepted a config that does not validate: %v", args, err)
		}
	})
}

func asksForHelp(args []string) bool {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "h" || name == "help") {
			return true
		}
	}
	return false
}

// FuzzParseSize checks that a size, once accepted, formats back to itself.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "1000000000", "512KiB", "1.5GiB", "10 MB", "10k", "-1", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("parseSize(%q) = %d, negative", s, n)
		}
		back, err := parseSize(formatSize(n))
		if err != nil || back != n {
			t.Fatalf("parseSize(%q) = %d, formatted %q, parsed back %d, %v", s, n, formatSize(n), back, err)
		}
	})
}

// FuzzParseDuration checks that a duration, once accepted, formats back to
// itself.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"0", "60", "0.5", "90s", "1h30m", "-1", "1e3", "99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDuration(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("parseDuration(%q) = %v, negative", s, d)
		}
		back, err := parseDuration(formatDuration(d))
		if err != nil || back != d {
			t.Fatalf("parseDuration(%q) = %v, formatted %q, parsed back %v, %v", s, d, formatDuration(d), back, err)
		}
	})
}
