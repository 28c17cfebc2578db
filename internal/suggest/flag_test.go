package suggest

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// testFlags is a flag set as a command declares one: long flags, short
// names sharing a long flag's value (-o), a short flag of its own (-x),
// booleans, a free-text string and a flag.Func, whose value cannot be
// compared.
func testFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("output", "", "")
	fs.Var(fs.Lookup("output").Value, "o", "")
	fs.Int("concurrency", 10, "")
	fs.Var(fs.Lookup("concurrency").Value, "c", "")
	fs.Duration("duration", 0, "")
	fs.Int("x", 0, "") // no long name
	fs.Bool("v", false, "")
	fs.Bool("q", false, "")
	fs.Bool("keep-warcs", false, "")
	fs.Bool("keep-going", false, "")
	fs.Func("pages-from", "", func(string) error { return nil })
	return fs
}

// TestFlagError: what a flag set's Parse returns is explained for any flag
// set, from the flags it defines.
func TestFlagError(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string // the whole error
	}{
		{[]string{"--outptu", "x"}, "unknown flag --outptu: did you mean --output?"},
		{[]string{"-Output", "x"}, "unknown flag -Output: did you mean --output?"},
		{[]string{"--conc", "5"}, "unknown flag --conc: flags are not abbreviated; did you mean --concurrency?"},
		{[]string{"--keep"}, "unknown flag --keep: flags are not abbreviated; did you mean one of --keep-going, --keep-warcs?"},
		{[]string{"--pages", "none"}, "unknown flag --pages: flags are not abbreviated; did you mean --pages-from?"},
		{[]string{"--hlep"}, "unknown flag --hlep: did you mean --help?"},
		{[]string{"-vq"}, "unknown flag -vq: short flags cannot be bundled; use -v -q"},
		{[]string{"-vc", "5"}, "unknown flag -vc: short flags cannot be bundled; use -v -c"},
		{[]string{"-c50"}, "unknown flag -c50: a short flag and its value are two arguments; use -c 50 or --concurrency 50"},
		{[]string{"-qc50"}, "unknown flag -qc50: short flags cannot be bundled, nor joined to their value; use -q -c 50"},
		{[]string{"-x5"}, "unknown flag -x5: a short flag and its value are two arguments; use -x 5"},
		{[]string{"-ox.wacz"}, "unknown flag -ox.wacz: a short flag and its value are two arguments; use -o x.wacz or --output x.wacz"},
		{[]string{"-outptu"}, "unknown flag -outptu: did you mean --output?"}, // free text after -o: the typo is likelier
		{[]string{"-cabc"}, "unknown flag -cabc"},                             // not a number: no reading fits
		{[]string{"--vq"}, "unknown flag --vq"},                               // two dashes: never bundled
		{[]string{"--xyzzy=s3cret"}, "unknown flag --xyzzy"},                  // never the value
		{[]string{"--duration"}, "flag needs an argument: --duration"},
		{[]string{"--duration=soon"}, `invalid value "soon" for flag --duration: parse error`},
		{[]string{"-duration=soon"}, `invalid value "soon" for flag -duration: parse error`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := testFlags()
			err := FlagError(fs, tt.args, fs.Parse(tt.args))
			require.EqualError(t, err, tt.want)
		})
	}
}

// TestFlagErrorUnknownFlag: an unknown flag is an *UnknownFlagError, so a
// caller can say more about names it knows (warcprox's options).
func TestFlagErrorUnknownFlag(t *testing.T) {
	fs := testFlags()
	args := []string{"-v", "--plugin=x"}
	var unknown *UnknownFlagError
	require.ErrorAs(t, FlagError(fs, args, fs.Parse(args)), &unknown)
	require.Equal(t, UnknownFlagError{Typed: "--plugin", Name: "plugin"}, *unknown)
}

// TestFlagErrorPassesOthers: --help and errors that are not the flag
// package's come back as they are.
func TestFlagErrorPassesOthers(t *testing.T) {
	fs := testFlags()
	require.ErrorIs(t, FlagError(fs, []string{"-h"}, fs.Parse([]string{"-h"})), flag.ErrHelp)
	other := errors.New("something else")
	require.Equal(t, other, FlagError(fs, nil, other))
	require.NoError(t, FlagError(fs, nil, nil))
}
