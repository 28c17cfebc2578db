package deploy_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

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
