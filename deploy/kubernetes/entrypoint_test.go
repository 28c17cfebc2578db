package kubernetes_test

import (
	"encoding/json"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
)

// This module is separate from the product's so that k8s.io/* stays out
// of the root go.mod; it cannot import the deploy_test package, so what
// it needs from there (the image's ENTRYPOINT, the flag parser) is copied
// here from deploy/docker_test.go and deploy/manifests_test.go.

// dockerfile returns the Dockerfile's logical lines (continuations joined).
func dockerfile(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../docker/Dockerfile")
	require.NoError(t, err)
	var lines []string
	var cur strings.Builder
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(l, " \t"), "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(l)
		if s := strings.TrimSpace(cur.String()); s != "" {
			lines = append(lines, s)
		}
		cur.Reset()
	}
	return lines
}

const imageBinary = "/usr/local/bin/warcproxy"

// entrypoint is the image's ENTRYPOINT (exec form), without the binary:
// the StatefulSet's args are appended to it.
func entrypoint(t *testing.T) []string {
	t.Helper()
	for _, l := range dockerfile(t) {
		if rest, ok := strings.CutPrefix(l, "ENTRYPOINT "); ok {
			var argv []string
			require.NoError(t, json.Unmarshal([]byte(rest), &argv), "ENTRYPOINT must be the exec (JSON) form")
			require.Equal(t, imageBinary, argv[0])
			return argv[1:]
		}
	}
	t.Fatal("Dockerfile has no ENTRYPOINT")
	return nil
}

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
