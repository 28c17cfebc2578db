package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBadCommandLineNamesTheMistake: what a warcprox (argparse) user or a
// hurried one types is answered with exit 2, before anything is created,
// and a message on stderr that names what was meant.
func TestBadCommandLineNamesTheMistake(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // the first line of stderr, after "warcproxy: "
	}{
		{"typo", []string{"--porr", "8001"}, "unknown flag --porr: did you mean --port?"},
		{"abbreviated warcprox alias", []string{"--max-thread", "10"},
			"unknown flag --max-thread: flags are not abbreviated; did you mean --max-threads?"},
		{"abbreviation", []string{"--rollover-idle", "60"},
			"unknown flag --rollover-idle: flags are not abbreviated; did you mean --rollover-idle-time?"},
		{"ambiguous abbreviation", []string{"--dedup", "none"},
			"unknown flag --dedup: flags are not abbreviated; did you mean one of --dedup-db, --dedup-min-binary-size, --dedup-min-text-size, --dedup-only-with-bucket, --dedup-shard-bits, --dedup-url-table?"},
		{"bundled short flags", []string{"-zv"}, "unknown flag -zv: short flags cannot be bundled; use -z -v"},
		{"value joined to a short flag", []string{"-p8000"},
			"unknown flag -p8000: a short flag and its value are two arguments; use -p 8000 or --port 8000"},
		{"bundled and joined", []string{"-d", "w", "-zp8000"},
			"unknown flag -zp8000: short flags cannot be bundled, nor joined to their value; use -z -p 8000"},
		{"unknown command", []string{"wacs"},
			`unknown command "wacs" (did you mean wacz?); the commands are healthcheck, wacz and dedup, and settings are flags, starting with -`},
		{"abbreviated command", []string{"health"},
			`unknown command "health" (did you mean healthcheck?); the commands are healthcheck, wacz and dedup, and settings are flags, starting with -`},
		{"a value without its flag", []string{"8000"},
			`unknown command "8000"; the commands are healthcheck, wacz and dedup, and settings are flags, starting with -`},
		{"a command after a flag", []string{"-v", "wacz"}, `unexpected argument "wacz" (warcproxy takes only flags, and a command must come first)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireRefused(t, tc.args, 2, "warcproxy: "+tc.want+"\nRun warcproxy --help for usage.\n")
		})
	}
}

// TestBadSubcommandFlagNamesTheMistake: a subcommand's flags are explained
// as warcproxy's are, by the same function, with a pointer to the
// subcommand's --help: exit 2 for wacz, 1 for healthcheck (Docker reserves
// 2), and nothing created.
func TestBadSubcommandFlagNamesTheMistake(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // the first line of stderr
	}{
		{"wacz typo", []string{"wacz", "--outptu", "x.wacz", "a.warc.gz"}, 2,
			"warcproxy wacz: unknown flag --outptu: did you mean --output?"},
		{"wacz case", []string{"wacz", "--Force", "-o", "x.wacz", "a.warc.gz"}, 2,
			"warcproxy wacz: unknown flag --Force: did you mean --force?"},
		{"wacz abbreviation", []string{"wacz", "-o", "x.wacz", "--compressed", "a.warc.gz"}, 2,
			"warcproxy wacz: unknown flag --compressed: flags are not abbreviated; did you mean --compressed-index?"},
		{"wacz value joined to -o", []string{"wacz", "-ox.wacz", "a.warc.gz"}, 2,
			"warcproxy wacz: unknown flag -ox.wacz: a short flag and its value are two arguments; use -o x.wacz or --output x.wacz"},
		{"wacz flag after the WARCs", []string{"wacz", "-o", "x.wacz", "a.warc.gz", "--pages", "none"}, 2,
			"warcproxy wacz: unknown flag --pages: flags are not abbreviated; did you mean --pages-from?"},
		{"wacz help mistyped", []string{"wacz", "--hlep"}, 2, "warcproxy wacz: unknown flag --hlep: did you mean --help?"},
		{"wacz nothing near", []string{"wacz", "--gzip", "-o", "x.wacz", "a.warc.gz"}, 2, "warcproxy wacz: unknown flag --gzip"},
		{"wacz missing value", []string{"wacz", "a.warc.gz", "--output"}, 2, "warcproxy wacz: flag needs an argument: --output"},
		{"healthcheck help mistyped", []string{"healthcheck", "--hlep"}, 1,
			"warcproxy healthcheck: unknown flag --hlep: did you mean --help?"},
		{"healthcheck takes no flags", []string{"healthcheck", "--timeout", "3s"}, 1, "warcproxy healthcheck: unknown flag --timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireRefused(t, tc.args, tc.code, tc.want+"\nRun warcproxy "+tc.args[0]+" --help for usage.\n")
		})
	}
}

// requireRefused runs warcproxy with args and requires exit code code,
// stderr wantStderr, nothing on stdout and nothing created.
func requireRefused(t *testing.T, args []string, code int, wantStderr string) {
	t.Helper()
	cmd := selfCommand(t, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "%v: %s", err, stderr.String())
	require.Equal(t, code, ee.ExitCode(), stderr.String())
	require.Empty(t, stdout.String())
	require.Equal(t, wantStderr, stderr.String())
	entries, err := os.ReadDir(cmd.Dir)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing created")
}

// TestCommandsDispatch: each row of the table runs its own command (its
// --help names it), so a new row needs nothing else.
func TestCommandsDispatch(t *testing.T) {
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			code, out := runMain(t, c.name, "--help")
			require.Equal(t, 0, code, out)
			require.True(t, strings.HasPrefix(out, "Usage: warcproxy "+c.name), out)
		})
	}
}
