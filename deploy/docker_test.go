package deploy_test

import (
	"encoding/json"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warcproxy/warcproxy/deploy/deploytest"
)

func dockerfile(t *testing.T) []string { return deploytest.Dockerfile(t, "docker/Dockerfile") }

func entrypoint(t *testing.T) []string { return deploytest.Entrypoint(t, "docker/Dockerfile") }

// runStage is the logical lines of the last stage, from its FROM on.
func runStage(t *testing.T) []string {
	t.Helper()
	lines := dockerfile(t)
	last := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "FROM ") {
			last = i
		}
	}
	require.GreaterOrEqual(t, last, 0, "Dockerfile has no FROM")
	return lines[last:]
}

var healthcheckRE = regexp.MustCompile(`^HEALTHCHECK (.*?)\s*CMD (\[.*\])$`)

// healthcheck returns the HEALTHCHECK's options (--timeout=5s ...) and its
// command, which must be the exec (JSON) form: the image has no shell.
func healthcheck(t *testing.T) (map[string]string, []string) {
	t.Helper()
	for _, l := range runStage(t) {
		if !strings.HasPrefix(l, "HEALTHCHECK ") {
			continue
		}
		m := healthcheckRE.FindStringSubmatch(l)
		require.NotNil(t, m, "HEALTHCHECK must be CMD in exec (JSON) form, there is no shell: %s", l)
		opts := map[string]string{}
		for _, f := range strings.Fields(m[1]) {
			k, v, ok := strings.Cut(strings.TrimPrefix(f, "--"), "=")
			require.True(t, ok, "HEALTHCHECK option %q", f)
			opts[k] = v
		}
		var argv []string
		require.NoError(t, json.Unmarshal([]byte(m[2]), &argv), "HEALTHCHECK CMD")
		return opts, argv
	}
	t.Fatal("the run stage has no HEALTHCHECK")
	return nil, nil
}

// TestDockerfile: the entrypoint's flags parse; listening beyond loopback
// comes with proxy auth; the healthcheck and EXPOSE match the ports the
// flags choose; the binary is built static and runs as non-root; a scratch
// run stage does not RUN and hands its volumes to the user it runs as.
func TestDockerfile(t *testing.T) {
	cfg := deploytest.ParseFlags(t, "Dockerfile ENTRYPOINT", entrypoint(t))
	require.Equal(t, "0.0.0.0", cfg.Address)
	require.NotEmpty(t, cfg.ProxyAuthFile, "--address 0.0.0.0 without --proxy-auth-file")
	require.Equal(t, "/warcs", cfg.Dir)
	require.True(t, strings.HasPrefix(cfg.CACert, "/ca/"), "CA in the /ca volume: %s", cfg.CACert)
	metrics := deploytest.Port(t, cfg.MetricsAddress)

	all := strings.Join(dockerfile(t), "\n")
	require.Contains(t, all, "CGO_ENABLED=0")
	require.Regexp(t, `(?m)^USER 65532:65532$`, all)
	require.Regexp(t, `(?m)^VOLUME \["/warcs", "/ca"\]`, all)
	require.Regexp(t, `(?m)^EXPOSE .*\b`+strconv.Itoa(cfg.Port)+`\b.*\b`+strconv.Itoa(metrics)+`\b`, all)
	require.Regexp(t, `(?m)^STOPSIGNAL SIGTERM`, all)

	// A "# syntax=" line makes BuildKit pull a frontend image from a
	// registry; the built-in one is enough and works offline.
	raw, err := os.ReadFile("docker/Dockerfile")
	require.NoError(t, err)
	require.NotRegexp(t, `(?mi)^#\s*syntax\s*=`, string(raw))

	run := runStage(t)
	if run[0] == "FROM scratch" {
		stage := strings.Join(run, "\n")
		require.NotRegexp(t, `(?m)^RUN `, stage, "a scratch stage has no shell to RUN")
		require.Regexp(t, `(?m)^COPY --from=build /etc/ssl/certs/ca-certificates\.crt `, stage, "--verify-upstream-tls needs CA certificates")
		// The volume mount points come from the build stage owned by the
		// USER, or a named volume starts root-owned and unwritable.
		require.Regexp(t, `(?m)^COPY --from=build --chown=65532:65532 \S+ /$`, stage)
	}

	opts, argv := healthcheck(t)
	require.Equal(t, []string{deploytest.ImageBinary, "healthcheck"}, argv[:2], "the binary's own healthcheck subcommand")
	require.Len(t, argv, 3, "the URL is spelled out, so this test can check its port")
	u, err := url.Parse(argv[2])
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:"+strconv.Itoa(metrics), u.Host, "the healthcheck asks the --metrics-address listener")
	require.Equal(t, "/status", u.Path)
	// `warcproxy healthcheck` gives up after 4 s and says why; Docker's
	// --timeout must leave it that time, or it is killed without a word.
	timeout, err := time.ParseDuration(opts["timeout"])
	require.NoError(t, err, "HEALTHCHECK --timeout")
	require.Greater(t, timeout, 4*time.Second)
}
