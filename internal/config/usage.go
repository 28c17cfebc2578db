package config

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

const (
	usageWidth = 100 // wrap help text at this column
	specWidth  = 34  // help starts after this column; longer names get their own line
)

// Command is a subcommand as Usage lists it.
type Command struct {
	Synopsis string // after "warcproxy ": "healthcheck [URL]"
	Help     string
}

// Usage writes the --help text: the synopses, the options by group, each
// with its aliases on one line, its help and its default, then cmds.
func Usage(w io.Writer, cmds ...Command) {
	c := Default()
	var sh shorthands
	var b strings.Builder
	b.WriteString("Usage: warcproxy [flags]\n")
	for _, cmd := range cmds {
		b.WriteString("       warcproxy " + cmd.Synopsis + "\n")
	}
	b.WriteString("\nwarcproxy is an HTTP/HTTPS proxy that records the traffic through it in WARC files.\n")
	for _, g := range groups(&c, &sh) {
		fmt.Fprintf(&b, "\n%s:\n", g.title)
		for _, o := range g.options {
			writeOption(&b, o)
		}
	}
	// -h and --help are the flag package's own; listed here only.
	writeOption(&b, &option{name: "help", aliases: []string{"h"}, help: "Print this help and exit.", value: boolValue{new(bool)}})
	b.WriteString(`
Flags take one dash or two: -p 8000, --port 8000, --port=8000. Boolean flags
take a value only after "=": --gzip=false. Short flags are not bundled (-z -v,
not -zv) and long ones are not abbreviated.
Durations: a Go duration (90s, 2m, 1h30m) or a number of seconds (60, 0.5).
Sizes: bytes (1000000000), or a number and a unit, KB MB GB TB (powers of 1000)
or KiB MiB GiB TiB (powers of 1024), any case: 512KiB, 1GB, 1.5GiB.
A setting given as a flag overrides --config.file, which overrides the default.
`)
	if len(cmds) > 0 {
		b.WriteString("\nCommands:\n")
		for _, cmd := range cmds {
			writeEntry(&b, "  "+cmd.Synopsis, strings.Fields(cmd.Help))
		}
	}
	fmt.Fprint(w, b.String())
}

func writeOption(b *strings.Builder, o *option) {
	var names []string
	short := "    "
	for _, a := range o.aliases {
		if len(a) == 1 {
			short = "-" + a + ", "
		} else {
			names = append(names, "--"+a)
		}
	}
	spec := "  " + short + strings.Join(append([]string{"--" + o.name}, names...), ", ")
	if o.metavar != "" {
		spec += " " + o.metavar
	}
	words := strings.Fields(o.help)
	if d := defaultText(o); d != "" {
		words = append(words, "(default "+d+")") // never broken across lines
	}
	writeEntry(b, spec, words)
}

// writeEntry writes spec, then words wrapped in the help column, on the
// same line if spec leaves room.
func writeEntry(b *strings.Builder, spec string, words []string) {
	pad := specWidth - len(spec)
	if pad < 2 {
		b.WriteString(spec + "\n")
		pad = specWidth
		spec = ""
	}
	lines := wrap(words, usageWidth-specWidth)
	for i, l := range lines {
		if i == 0 {
			b.WriteString(spec + strings.Repeat(" ", pad) + l + "\n")
			continue
		}
		b.WriteString(strings.Repeat(" ", specWidth) + l + "\n")
	}
}

// defaultText is the default shown in Usage, or "" for an empty or zero one
// (whose meaning the help states).
func defaultText(o *option) string {
	s := o.value.String()
	switch {
	case s == "" || s == "0" || s == "0s" || s == "false":
		return ""
	case o.metavar == "" || o.metavar == "int" || o.metavar == "size" || o.metavar == "duration":
		return s
	}
	return strconv.Quote(s)
}

// wrap joins words into lines of at most width bytes, or one word if longer.
func wrap(words []string, width int) []string {
	var lines []string
	line := ""
	for _, w := range words {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	return append(lines, line)
}
