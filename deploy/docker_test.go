package deploy_test

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// dockerfile returns the Dockerfile's logical lines (continuations joined).
func dockerfile(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("docker/Dockerfile")
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

// entrypoint is the image's ENTRYPOINT (exec form), without the binary.
func entrypoint(t *testing.T) []string {
	t.Helper()
	for _, l := range dockerfile(t) {
		if rest, ok := strings.CutPrefix(l, "ENTRYPOINT "); ok {
			var argv []string
			require.NoError(t, json.Unmarshal([]byte(rest), &argv), "ENTRYPOINT must be the exec (JSON) form")
			require.Equal(t, "/usr/local/bin/warcproxy", argv[0])
			return argv[1:]
		}
	}
	t.Fatal("Dockerfile has no ENTRYPOINT")
	return nil
}

// TestDockerfile: the entrypoint's flags parse; listening beyond loopback
// comes with proxy auth; the healthcheck and EXPOSE match the ports the
// flags choose; the binary is built static and runs as non-root.
func TestDockerfile(t *testing.T) {
	cfg := parseFlags(t, "Dockerfile ENTRYPOINT", entrypoint(t))
	require.Equal(t, "0.0.0.0", cfg.Address)
	require.NotEmpty(t, cfg.ProxyAuthFile, "--address 0.0.0.0 without --proxy-auth-file")
	require.Equal(t, "/warcs", cfg.Dir)
	require.True(t, strings.HasPrefix(cfg.CACert, "/ca/"), "CA in the /ca volume: %s", cfg.CACert)
	metrics := port(t, cfg.MetricsAddress)

	all := strings.Join(dockerfile(t), "\n")
	require.Contains(t, all, "CGO_ENABLED=0")
	require.Regexp(t, `(?m)^USER 65532`, all)
	require.Regexp(t, `(?m)^VOLUME \["/warcs", "/ca"\]`, all)
	require.Regexp(t, `(?m)^EXPOSE .*\b`+strconv.Itoa(cfg.Port)+`\b.*\b`+strconv.Itoa(metrics)+`\b`, all)
	require.Regexp(t, `(?m)^HEALTHCHECK .*http://127\.0\.0\.1:`+strconv.Itoa(metrics)+`/status`, all)
	require.Regexp(t, `(?m)^STOPSIGNAL SIGTERM`, all)
}
