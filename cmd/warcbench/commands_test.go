package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUnknownCommandListsTheCommands: a mistyped command exits 2 with the
// one likely meant, then the usage listing every command of the table.
func TestUnknownCommandListsTheCommands(t *testing.T) {
	for _, tc := range []struct {
		arg, first string
	}{
		{"swep", `warcbench: unknown command "swep" (did you mean sweep?)`},
		{"so", `warcbench: unknown command "so" (did you mean soak?)`},
		{"bogus", `warcbench: unknown command "bogus"`},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(context.Background(), []string{tc.arg}, &stdout, &stderr)
			require.Equal(t, 2, code)
			require.Empty(t, stdout.String())
			first, rest, _ := strings.Cut(stderr.String(), "\n")
			require.Equal(t, tc.first, first)
			for _, c := range commands() {
				require.Contains(t, rest, "\n  "+c.name+strings.Repeat(" ", 9-len(c.name))+c.summary+"\n")
			}
		})
	}
}

// TestBadFlagNamesTheMistake: every command's flags are explained as
// warcproxy's are (the same function), with a pointer to the command's
// --help instead of the whole usage: exit 2, nothing on stdout, and no
// output directory created.
func TestBadFlagNamesTheMistake(t *testing.T) {
	for _, tc := range []struct {
		args []string // OUT stands for an output directory that must stay absent
		want string   // the first line of stderr, after "warcbench COMMAND: "
	}{
		{[]string{"run", "--prxy", "http://127.0.0.1:8000", "http://127.0.0.1:1/"}, "unknown flag --prxy: did you mean --proxy?"},
		{[]string{"run", "--conc", "5", "http://127.0.0.1:1/"}, "unknown flag --conc: flags are not abbreviated; did you mean --concurrency?"},
		{[]string{"run", "-c50", "http://127.0.0.1:1/"}, "unknown flag -c50: a short flag and its value are two arguments; use -c 50 or --concurrency 50"},
		{[]string{"run", "http://127.0.0.1:1/", "--Insecure"}, "unknown flag --Insecure: did you mean --insecure?"},
		{[]string{"sweep", "--out", "OUT", "--dur", "1s"}, "unknown flag --dur: flags are not abbreviated; did you mean --duration?"},
		{[]string{"sweep", "--out", "OUT", "-vn", "3"}, "unknown flag -vn: short flags cannot be bundled; use -v -n"},
		{[]string{"sweep", "--out", "OUT", "-n3"}, "unknown flag -n3: a short flag and its value are two arguments; use -n 3"},
		{[]string{"sweep", "--out", "OUT", "--writer-worker", "1,2"}, "unknown flag --writer-worker: flags are not abbreviated; did you mean --writer-workers?"},
		{[]string{"soak", "--out", "OUT", "--keep"}, "unknown flag --keep: flags are not abbreviated; did you mean --keep-warcs?"},
		{[]string{"soak", "--out", "OUT", "--socket-timout", "2s"}, "unknown flag --socket-timout: did you mean --socket-timeout?"},
		{[]string{"origin", "--tls", "0"}, "unknown flag --tls: flags are not abbreviated; did you mean --tls-port?"},
		{[]string{"origin", "--hlep"}, "unknown flag --hlep: did you mean --help?"},
		{[]string{"origin", "--port"}, "flag needs an argument: --port"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := slices.Clone(tc.args)
			for i := range args {
				args[i] = strings.ReplaceAll(args[i], "OUT", out)
			}
			var stdout, stderr bytes.Buffer
			code := realMain(context.Background(), args, &stdout, &stderr)
			require.Equal(t, 2, code, stderr.String())
			require.Empty(t, stdout.String())
			cmd := "warcbench " + args[0]
			require.Equal(t, cmd+": "+tc.want+"\nRun "+cmd+" --help for usage.\n", stderr.String())
			require.NoDirExists(t, out)
		})
	}
}

// TestHelpPrintsUsage: --help still prints a command's whole usage and
// exits 0, though a bad flag no longer does.
func TestHelpPrintsUsage(t *testing.T) {
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(context.Background(), []string{c.name, "--help"}, &stdout, &stderr)
			require.Equal(t, 0, code, stderr.String())
			require.True(t, strings.HasPrefix(stderr.String(), "Usage: warcbench "+c.name), stderr.String())
			require.Contains(t, stderr.String(), "\n  -", "the flags, from PrintDefaults")
		})
	}
}
