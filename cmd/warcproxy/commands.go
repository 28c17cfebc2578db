package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/suggest"
)

// command is a subcommand, `warcproxy NAME ARGS...`. The table commands
// returns dispatches them, lists them in --help and names them when the
// first argument is none of them, so a new one needs only its row.
type command struct {
	name     string
	synopsis string // after "warcproxy ", as --help shows it
	help     string
	run      func(args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{name: "healthcheck", synopsis: "healthcheck [URL]",
			help: fmt.Sprintf("Exit 0 if URL answers 200 within %s, else print why and exit 1; URL defaults to %s and no proxy is used. "+
				"For container healthchecks in images without a shell.", healthTimeout, defaultHealthURL),
			run: func(args []string, _, stderr io.Writer) int { return healthcheckCommand(args, stderr) }},
		{name: "wacz", synopsis: "wacz --output FILE.wacz [flags] WARC...",
			help: "Pack WARC files into a WACZ file for ReplayWeb.page. Its flags: warcproxy wacz --help.",
			run:  waczCommand},
		{name: "dedup", synopsis: "dedup import|migrate --dedup-db SPEC [flags] ...",
			help: "Seed a dedup index from existing WARC, WACZ and CDXJ files (import: entries there are never replaced), " +
				"or convert an index written by an earlier release to the compact layout (migrate). " +
				"Their flags: warcproxy dedup import --help, warcproxy dedup migrate --help.",
			run: dedupCommand},
	}
}

// runCommand runs the command args[0] names; any other word there is a
// usage error (exit 2), since warcproxy itself takes only flags.
func runCommand(cmds []command, args []string, stdout, stderr io.Writer) int {
	for _, c := range cmds {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "warcproxy: %v\nRun warcproxy --help for usage.\n", unknownCommand(args[0], cmds))
	return 2
}

// unknownCommand names the commands there are, and the one likely meant.
func unknownCommand(word string, cmds []command) error {
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.name
	}
	msg := fmt.Sprintf("unknown command %q", word)
	if meant := suggest.Names(word, names); len(meant) > 0 {
		msg += " (did you mean " + strings.Join(meant, " or ") + "?)"
	}
	return fmt.Errorf("%s; the commands are %s, and settings are flags, starting with -", msg, andList(names))
}

// andList joins names as "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// usage writes the --help text, commands included.
func usage(w io.Writer, cmds []command) {
	entries := make([]config.Command, len(cmds))
	for i, c := range cmds {
		entries[i] = config.Command{Synopsis: c.synopsis, Help: c.help}
	}
	config.Usage(w, entries...)
}
