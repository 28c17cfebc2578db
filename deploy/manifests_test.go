package deploy_test

import (
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
)

// parseFlags runs the proxy's own flag parser over a command line from a
// deployment file, so a misspelt or removed flag fails here, not at 3 am.
func parseFlags(t *testing.T, where string, args []string) config.Config {
	t.Helper()
	cfg, err := config.Parse(args, io.Discard)
	require.NoError(t, err, "%s: warcproxy %s", where, strings.Join(args, " "))
	return cfg
}

func port(t *testing.T, hostport string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return n
}
