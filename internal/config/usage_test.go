package config

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const configDoc = "../../docs/configuration.md"

func usageText() string {
	var b bytes.Buffer
	Usage(&b)
	return b.String()
}

// TestUsageShowsEveryFlag checks that every name the flag set accepts
// appears in the help.
func TestUsageShowsEveryFlag(t *testing.T) {
	usage := usageText()
	fs, _ := flagSet(groups(new(Config), new(shorthands)))
	fs.VisitAll(func(f *flag.Flag) {
		name := "--" + f.Name
		if len(f.Name) == 1 {
			name = "-" + f.Name + ", "
		}
		require.Contains(t, usage, name)
	})
}

func TestUsageFitsTheWidth(t *testing.T) {
	for _, line := range strings.Split(usageText(), "\n") {
		require.LessOrEqual(t, len(line), usageWidth, "line too long: %q", line)
	}
}

// TestConfigurationDocListsEveryOption checks that docs/configuration.md
// has a table row for every option and names every alias.
func TestConfigurationDocListsEveryOption(t *testing.T) {
	data, err := os.ReadFile(configDoc)
	require.NoError(t, err)
	doc := string(data)
	for _, g := range groups(new(Config), new(shorthands)) {
		for _, o := range g.options {
			require.Contains(t, doc, "| `--"+o.name+"`", "%s has no row for --%s", configDoc, o.name)
			for _, a := range o.aliases {
				prefix := "--"
				if len(a) == 1 {
					prefix = "-"
				}
				require.Contains(t, doc, "`"+prefix+a+"`", "%s does not mention %s%s", configDoc, prefix, a)
			}
		}
	}
}
