// Package deploytest reads the deployment files (the Dockerfile, unit
// files, manifests) for the tests that check them: the deploy package's
// and the Kubernetes module's, which cannot share test files.
package deploytest

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

// ImageBinary is where the container image keeps the binary.
const ImageBinary = "/usr/local/bin/warcproxy"

// Dockerfile returns the logical lines of the Dockerfile at path
// (continuations joined, comments left out).
func Dockerfile(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
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

// Entrypoint is the image's ENTRYPOINT (exec form) without the binary: a
// container's arguments are appended to it.
func Entrypoint(t testing.TB, dockerfilePath string) []string {
	t.Helper()
	for _, l := range Dockerfile(t, dockerfilePath) {
		if rest, ok := strings.CutPrefix(l, "ENTRYPOINT "); ok {
			var argv []string
			require.NoError(t, json.Unmarshal([]byte(rest), &argv), "ENTRYPOINT must be the exec (JSON) form")
			require.Equal(t, ImageBinary, argv[0])
			return argv[1:]
		}
	}
	t.Fatal("Dockerfile has no ENTRYPOINT")
	return nil
}

// ParseFlags runs the proxy's own flag parser over a command line from a
// deployment file, so a misspelt or removed flag fails here, not at 3 am.
func ParseFlags(t testing.TB, where string, args []string) config.Config {
	t.Helper()
	cfg, err := config.Parse(args, io.Discard)
	require.NoError(t, err, "%s: warcproxy %s", where, strings.Join(args, " "))
	return cfg
}

// Port is the port of host:port.
func Port(t testing.TB, hostport string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return n
}
