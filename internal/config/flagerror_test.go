package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUnknownFlagSaysWhatWasMeant: what warcprox users type (argparse
// takes bundled short flags, values joined to them and abbreviations) and
// plain typos get the flag they meant, in full.
func TestUnknownFlagSaysWhatWasMeant(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string // the whole error
	}{
		{[]string{"--porr", "8001"}, "unknown flag --porr: did you mean --port?"},
		{[]string{"-porr", "8001"}, "unknown flag -porr: did you mean --port?"},
		{[]string{"--Port", "8001"}, "unknown flag --Port: did you mean --port?"},
		{[]string{"--max_conns", "3"}, "unknown flag --max_conns: did you mean --max-conns?"},
		{[]string{"--max-thraeds", "3"}, "unknown flag --max-thraeds: did you mean --max-threads?"},
		{[]string{"--hlep"}, "unknown flag --hlep: did you mean --help?"},
		{[]string{"-dri", "warcs"}, "unknown flag -dri: did you mean --dir?"},
		{[]string{"--max-thread", "10"}, "unknown flag --max-thread: flags are not abbreviated; did you mean --max-threads?"},
		{[]string{"--rollover-idle", "60"}, "unknown flag --rollover-idle: flags are not abbreviated; did you mean --rollover-idle-time?"},
		{[]string{"--stats=none"}, "unknown flag --stats: flags are not abbreviated; did you mean --stats-db?"},
		{[]string{"--dedup", "none"}, "unknown flag --dedup: flags are not abbreviated; did you mean one of " +
			"--dedup-db, --dedup-min-binary-size, --dedup-min-text-size, --dedup-only-with-bucket, --dedup-shard-bits, --dedup-url-table?"},
		{[]string{"-zv"}, "unknown flag -zv: short flags cannot be bundled; use -z -v"},
		{[]string{"-vq"}, "unknown flag -vq: short flags cannot be bundled; use -v -q"},
		{[]string{"-zp", "8000"}, "unknown flag -zp: short flags cannot be bundled; use -z -p"},
		{[]string{"-p8000"}, "unknown flag -p8000: a short flag and its value are two arguments; use -p 8000 or --port 8000"},
		{[]string{"-s1GB"}, "unknown flag -s1GB: a short flag and its value are two arguments; use -s 1GB or --rollover-size 1GB"},
		{[]string{"-d/srv/warcs"}, "unknown flag -d/srv/warcs: a short flag and its value are two arguments; use -d /srv/warcs or --dir /srv/warcs"},
		{[]string{"-zvp8000"}, "unknown flag -zvp8000: short flags cannot be bundled, nor joined to their value; use -z -v -p 8000"},
		{[]string{"-pabc"}, "unknown flag -pabc"},     // not a port: no reading fits
		{[]string{"--zv"}, "unknown flag --zv"},       // two dashes: never bundled
		{[]string{"-x"}, "unknown flag -x"},           // one letter: too short to guess
		{[]string{"--xyzzy"}, "unknown flag --xyzzy"}, // nothing near
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := Parse(tt.args, nil)
			require.EqualError(t, err, tt.want)
		})
	}
}
