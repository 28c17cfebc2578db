package deploy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

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

// systemdUnit returns the unit's settings (continuations joined; a key
// given twice keeps every value).
func systemdUnit(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile("systemd/warcproxy.service")
	require.NoError(t, err)
	out := map[string][]string{}
	var cur strings.Builder
	for _, l := range strings.Split(string(data), "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "#") || strings.HasPrefix(t, "[") {
			continue
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(l, " \t"), "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(l)
		if k, v, ok := strings.Cut(strings.TrimSpace(cur.String()), "="); ok {
			out[k] = append(out[k], strings.TrimSpace(v))
		}
		cur.Reset()
	}
	return out
}

func systemdDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		n, err2 := strconv.Atoi(s) // plain seconds
		require.NoError(t, err2, "duration %q", s)
		d = time.Duration(n) * time.Second
	}
	return d
}

// TestSystemdUnit: ExecStart's flags parse; the stop timeout is longer than
// the drain; LimitNOFILE follows the 3-per-connection rule; the hardening
// the README promises is there, and the WARC directory is writable.
func TestSystemdUnit(t *testing.T) {
	u := systemdUnit(t)
	require.Len(t, u["ExecStart"], 1)
	argv := strings.Fields(strings.ReplaceAll(u["ExecStart"][0], "${CREDENTIALS_DIRECTORY}", "/run/credentials/warcproxy.service"))
	require.Equal(t, "/usr/local/bin/warcproxy", argv[0])
	cfg := parseFlags(t, "warcproxy.service ExecStart", argv[1:])
	if cfg.Address != "127.0.0.1" && cfg.Address != "localhost" {
		require.NotEmpty(t, cfg.ProxyAuthFile, "--address %s without proxy auth", cfg.Address)
	}
	stop := systemdDuration(t, u["TimeoutStopSec"][0])
	require.Greater(t, stop, cfg.ShutdownTimeout+10*time.Second, "TimeoutStopSec against --shutdown-timeout")
	nofile, err := strconv.Atoi(u["LimitNOFILE"][0])
	require.NoError(t, err)
	require.GreaterOrEqual(t, nofile, 3*cfg.MaxConns+1024, "LimitNOFILE against --max-conns %d", cfg.MaxConns)
	require.Contains(t, u["ReadWritePaths"], cfg.Dir)

	for k, want := range map[string]string{
		"KillSignal": "SIGTERM", "Restart": "on-failure", "NoNewPrivileges": "yes",
		"ProtectSystem": "strict", "PrivateTmp": "yes", "ProtectHome": "yes",
		"CapabilityBoundingSet": "", "SystemCallFilter": "@system-service",
	} {
		require.Contains(t, u[k], want, "%s=%s", k, want)
	}
	require.Contains(t, u["RestrictAddressFamilies"][0], "AF_NETLINK", "the loop check lists the host's addresses")
	require.NotContains(t, u, "ProcSubset", "Go reads /proc/sys/net/core/somaxconn")
}

// k8sObjects reads every manifest under kubernetes/ (kustomize's own file
// aside).
func k8sObjects(t *testing.T) map[string]map[string]any {
	t.Helper()
	entries, err := os.ReadDir("kubernetes")
	require.NoError(t, err)
	objs := map[string]map[string]any{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") || e.Name() == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile("kubernetes/" + e.Name())
		require.NoError(t, err)
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var o map[string]any
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				break
			} else {
				require.NoError(t, err, e.Name())
			}
			if o == nil {
				continue
			}
			md := o["metadata"].(map[string]any)
			objs[o["kind"].(string)+"/"+md["name"].(string)] = o
		}
	}
	return objs
}

// get walks a decoded YAML document: get(o, "spec", "template", 0, ...).
func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			require.True(t, ok, "%v: not a map at %q", path, k)
			v = m[k]
		case int:
			l, ok := v.([]any)
			require.True(t, ok && k < len(l), "%v: no item %d", path, k)
			v = l[k]
		}
	}
	return v
}

// TestKubernetes: the StatefulSet's command line (image entrypoint + args)
// parses and points at the Redis Service; probes and scrape annotations
// use the metrics port the flags choose; the grace period outlasts the
// drain; every Secret and volume referenced exists.
func TestKubernetes(t *testing.T) {
	objs := k8sObjects(t)
	sts := objs["StatefulSet/warcproxy"]
	require.NotNil(t, sts, "StatefulSet/warcproxy; have %v", keys(objs))
	pod := get(t, sts, "spec", "template", "spec").(map[string]any)
	var c map[string]any
	for _, x := range pod["containers"].([]any) {
		if x.(map[string]any)["name"] == "warcproxy" {
			c = x.(map[string]any)
		}
	}
	require.NotNil(t, c)
	var args []string
	for _, a := range c["args"].([]any) {
		args = append(args, a.(string))
	}
	cfg := parseFlags(t, "StatefulSet args", append(entrypoint(t), args...))
	require.Equal(t, "redis://redis:6379/0", cfg.DedupDB)
	require.Equal(t, "redis://redis:6379/0", cfg.StatsDB)
	require.NotEmpty(t, cfg.ProxyAuthFile)
	require.NotNil(t, objs["Service/redis"])
	require.Equal(t, 6379, get(t, objs["Service/redis"], "spec", "ports", 0, "port"))
	require.NotNil(t, objs["Deployment/redis"])
	require.GreaterOrEqual(t, get(t, sts, "spec", "replicas"), 2, "a fleet")

	ports := map[string]int{}
	for _, p := range c["ports"].([]any) {
		pm := p.(map[string]any)
		ports[pm["name"].(string)] = pm["containerPort"].(int)
	}
	require.Equal(t, cfg.Port, ports["proxy"])
	require.Equal(t, port(t, cfg.MetricsAddress), ports["metrics"])
	ann := get(t, sts, "spec", "template", "metadata", "annotations").(map[string]any)
	require.Equal(t, "true", ann["prometheus.io/scrape"])
	require.Equal(t, strconv.Itoa(ports["metrics"]), ann["prometheus.io/port"])
	require.Equal(t, "/metrics", ann["prometheus.io/path"])
	for _, probe := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
		require.Equal(t, "/status", get(t, c, probe, "httpGet", "path"), probe)
		require.Equal(t, "metrics", get(t, c, probe, "httpGet", "port"), probe)
	}
	grace := time.Duration(pod["terminationGracePeriodSeconds"].(int)) * time.Second
	preStop := 0
	if cmd, ok := get(t, c, "lifecycle", "preStop", "exec", "command").([]any); ok && len(cmd) == 2 && cmd[0] == "/bin/sleep" {
		preStop, _ = strconv.Atoi(cmd[1].(string))
	}
	require.Greater(t, grace, cfg.ShutdownTimeout+time.Duration(preStop)*time.Second+10*time.Second, "terminationGracePeriodSeconds")

	// Volumes: mounted where the flags look, backed by something.
	mounts := map[string]string{}
	for _, m := range c["volumeMounts"].([]any) {
		mm := m.(map[string]any)
		mounts[mm["name"].(string)] = mm["mountPath"].(string)
	}
	require.Equal(t, cfg.Dir, mounts["warcs"])
	require.True(t, strings.HasPrefix(cfg.ProxyAuthFile, mounts["proxy-auth"]+"/"), "proxy auth file %s under %s", cfg.ProxyAuthFile, mounts["proxy-auth"])
	require.True(t, strings.HasPrefix(cfg.CACert, mounts["ca"]+"/"))
	require.Equal(t, "warcs", get(t, sts, "spec", "volumeClaimTemplates", 0, "metadata", "name"))
	vols := map[string]map[string]any{}
	for _, v := range pod["volumes"].([]any) {
		vols[v.(map[string]any)["name"].(string)] = v.(map[string]any)
	}
	auth := vols["proxy-auth"]["secret"].(map[string]any)
	require.Equal(t, "/run/secrets/"+get(t, auth, "items", 0, "path").(string), cfg.ProxyAuthFile)
	secret := objs["Secret/"+auth["secretName"].(string)]
	require.NotNil(t, secret, "Secret %s", auth["secretName"])
	require.Contains(t, get(t, secret, "stringData"), get(t, auth, "items", 0, "key"))

	// The Services select the pods and name ports the container has.
	for _, name := range []string{"Service/warcproxy", "Service/warcproxy-headless"} {
		svc := objs[name]
		require.NotNil(t, svc, name)
		require.Equal(t, "warcproxy", get(t, svc, "spec", "selector", "app.kubernetes.io/name"), name)
		for _, p := range get(t, svc, "spec", "ports").([]any) {
			require.Contains(t, ports, p.(map[string]any)["targetPort"], name)
		}
	}
	require.Equal(t, "warcproxy-headless", get(t, sts, "spec", "serviceName"))
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
