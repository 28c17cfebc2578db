package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/warcproxy/warcproxy/internal/bench"
	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
)

// TestPrometheusCountsWhatTheLoadDid puts a real Prometheus in the loop:
// it scrapes a running proxy's --metrics-address every second with the
// scrape job and the rule file from deploy/prometheus, warcbench's load
// generator sends ~5 s of traffic (plain HTTP and MITM HTTPS) through the
// proxy to a local origin, and after two more scrapes the
// warcproxy_proxy_captures_total that Prometheus stored, summed over its
// results, equals the number of requests the load generator completed.
// Every alerting rule has been evaluated against the real series without
// error, and none is firing for a healthy proxy.
func TestPrometheusCountsWhatTheLoadDid(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus and loads a proxy for 5 s")
	}
	promBin := lookTool(t, "prometheus")

	origin := httptest.NewServer(bench.NewOrigin())
	t.Cleanup(origin.Close)
	originTLS := httptest.NewTLSServer(bench.NewOrigin())
	t.Cleanup(originTLS.Close)
	p := proxytest.Start(t, func(c *config.Config) { c.MetricsAddress = "127.0.0.1:0" })
	metricsAddr := p.App.MetricsAddr().String()

	prom := startPrometheus(t, promBin, metricsAddr)
	// The proxy is up and scraped before the load starts.
	require.Eventually(t, func() bool {
		v, err := prom.query(`up{job="warcproxy"}`)
		return err == nil && len(v) == 1 && v[0].value == 1
	}, 30*time.Second, 100*time.Millisecond, "Prometheus never scraped the proxy:\n%s", prom.logs())

	var targets []bench.Target
	for _, u := range []string{
		origin.URL + "/bytes/2KB",
		origin.URL + "/bytes/16KB?text=1",
		origin.URL + "/stream/4KB/4",
		originTLS.URL + "/bytes/8KB",
	} {
		tg, err := bench.ParseTarget(u)
		require.NoError(t, err)
		targets = append(targets, tg)
	}
	res, err := bench.Run(context.Background(), bench.RunConfig{
		Targets:     targets,
		Proxy:       p.URL,
		Duration:    5 * time.Second,
		Concurrency: 4,
		Method:      http.MethodGet,
		Mode:        bench.ModeKeepAlive,
		Timeout:     30 * time.Second,
		RootCAs:     p.CAPool,
	})
	require.NoError(t, err)
	require.Positive(t, res.Requests)
	require.Empty(t, res.Errors, "load errors")
	require.Equal(t, res.Requests, res.Successes, "statuses %v", res.Status)
	t.Logf("warcbench: %d requests in %v (%.0f/s)", res.Requests, res.Elapsed.Round(time.Millisecond),
		float64(res.Requests)/res.Elapsed.Seconds())

	// Every exchange answered is counted and written; then two scrapes
	// that started after that.
	p.Settle()
	prom.waitScrapes(t, time.Now(), 2)

	vec, err := prom.query(`warcproxy_proxy_captures_total`)
	require.NoError(t, err)
	var sum float64
	var parts []string
	for _, s := range vec {
		sum += s.value
		parts = append(parts, fmt.Sprintf("%s=%v", s.metric["result"], s.value))
	}
	require.Equal(t, float64(res.Requests), sum,
		"Prometheus' warcproxy_proxy_captures_total (%s) against warcbench's completed requests", strings.Join(parts, " "))
	t.Logf("Prometheus: warcproxy_proxy_captures_total %s", strings.Join(parts, " "))

	// What the writer wrote, as Prometheus saw it, is what was captured.
	written, err := prom.query(`sum(warcproxy_writer_captures_total{result="written"})`)
	require.NoError(t, err)
	archived, err := prom.query(`sum(warcproxy_proxy_captures_total{result=~"archived|revisit"})`)
	require.NoError(t, err)
	require.Len(t, written, 1)
	require.Len(t, archived, 1)
	require.Equal(t, archived[0].value, written[0].value, "captures queued vs written")

	// The deployed rules evaluated against real series: no error, nothing
	// firing on a healthy proxy.
	rules := prom.rules(t)
	require.NotEmpty(t, rules)
	for _, r := range rules {
		require.Equal(t, "ok", r.Health, "rule %s: %s", r.Name, r.LastError)
		require.NotEqual(t, "firing", r.State, "alert %s fires on a healthy proxy", r.Name)
	}
}

type prometheus struct {
	base *url.URL
	log  *lockedBuffer
}

type sample struct {
	metric map[string]string
	value  float64
}

// startPrometheus runs prometheus on a free 127.0.0.1 port with a temp
// data dir, scraping metricsAddr every second with the warcproxy job of
// deploy/prometheus/prometheus.yml (its other jobs dropped) and its rule
// file, evaluated every second. It is stopped when the test ends.
func startPrometheus(t *testing.T, bin, metricsAddr string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgPath, promTestConfig(t, metricsAddr), 0o644))
	for attempt := 0; ; attempt++ {
		port := freePort(t)
		log := &lockedBuffer{}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		cmd := exec.Command(bin,
			"--config.file="+cfgPath,
			"--storage.tsdb.path="+filepath.Join(dir, fmt.Sprintf("data-%d", attempt)),
			"--web.listen-address="+addr,
			"--log.level=warn",
		)
		cmd.Stdout, cmd.Stderr = log, log
		require.NoError(t, cmd.Start())
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		prom := &prometheus{base: &url.URL{Scheme: "http", Host: addr}, log: log}
		if prom.waitReady(exited) {
			t.Cleanup(func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(10 * time.Second):
					_ = cmd.Process.Kill()
					<-exited
				}
			})
			return prom
		}
		_ = cmd.Process.Kill()
		<-exited
		// Lost the port to someone else between freePort and the bind?
		if attempt == 4 || !strings.Contains(log.String(), "address already in use") {
			t.Fatalf("prometheus did not become ready:\n%s", log.String())
		}
	}
}

// promTestConfig is deploy/prometheus/prometheus.yml with the warcproxy
// job pointed at the test's proxy and everything at 1 s.
func promTestConfig(t *testing.T, metricsAddr string) []byte {
	t.Helper()
	data, err := os.ReadFile(promConfig)
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(data, &cfg))
	cfg["global"] = map[string]any{"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"}
	var rules []any
	for _, f := range cfg["rule_files"].([]any) {
		abs, err := filepath.Abs(filepath.Join(filepath.Dir(promConfig), f.(string)))
		require.NoError(t, err)
		rules = append(rules, abs)
	}
	cfg["rule_files"] = rules
	var job map[string]any
	for _, j := range cfg["scrape_configs"].([]any) {
		if jm := j.(map[string]any); jm["job_name"] == "warcproxy" {
			job = jm
		}
	}
	require.NotNil(t, job, "%s has no warcproxy job", promConfig)
	job["static_configs"] = []any{map[string]any{"targets": []any{metricsAddr}}}
	cfg["scrape_configs"] = []any{job}
	out, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	return out
}

func (p *prometheus) waitReady(exited <-chan struct{}) bool {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		resp, err := http.Get(p.base.String() + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

func (p *prometheus) logs() string { return p.log.String() }

// api GETs /api/v1/PATH and decodes its data field into v.
func (p *prometheus) api(path string, params url.Values, v any) error {
	resp, err := http.Get(p.base.String() + "/api/v1/" + path + "?" + params.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("%s: %w: %s", path, err, body)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s: %s", path, env.Status, env.Error)
	}
	return json.Unmarshal(env.Data, v)
}

// query runs an instant query and returns its vector.
func (p *prometheus) query(q string) ([]sample, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := p.api("query", url.Values{"query": {q}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: result type %s", q, data.ResultType)
	}
	out := make([]sample, 0, len(data.Result))
	for _, r := range data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: value %v: %w", q, r.Value[1], err)
		}
		out = append(out, sample{metric: r.Metric, value: v})
	}
	return out, nil
}

// waitScrapes waits until n scrapes of the warcproxy target have started
// after since, and were successful.
func (p *prometheus) waitScrapes(t *testing.T, since time.Time, n int) {
	t.Helper()
	var seen []time.Time
	deadline := time.Now().Add(30 * time.Second)
	for len(seen) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d scrapes after %v in 30 s:\n%s", len(seen), since, p.logs())
		}
		var data struct {
			ActiveTargets []struct {
				Labels     map[string]string `json:"labels"`
				LastScrape time.Time         `json:"lastScrape"`
				LastError  string            `json:"lastError"`
				Health     string            `json:"health"`
			} `json:"activeTargets"`
		}
		require.NoError(t, p.api("targets", url.Values{"state": {"active"}}, &data))
		for _, tg := range data.ActiveTargets {
			if tg.Labels["job"] != "warcproxy" || !tg.LastScrape.After(since) {
				continue
			}
			require.Equal(t, "up", tg.Health, "scrape: %s", tg.LastError)
			if len(seen) == 0 || tg.LastScrape.After(seen[len(seen)-1]) {
				seen = append(seen, tg.LastScrape)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type ruleState struct {
	Name      string `json:"name"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
	State     string `json:"state"` // alerts: inactive, pending, firing
}

// rules returns every rule once all of them have been evaluated.
func (p *prometheus) rules(t *testing.T) []ruleState {
	t.Helper()
	var out []ruleState
	require.Eventually(t, func() bool {
		var data struct {
			Groups []struct {
				Rules []struct {
					ruleState
					LastEvaluation time.Time `json:"lastEvaluation"`
				} `json:"rules"`
			} `json:"groups"`
		}
		if err := p.api("rules", nil, &data); err != nil {
			return false
		}
		out = out[:0]
		for _, g := range data.Groups {
			for _, r := range g.Rules {
				if r.LastEvaluation.IsZero() || r.Health == "unknown" {
					return false
				}
				out = append(out, r.ruleState)
			}
		}
		return len(out) > 0
	}, 30*time.Second, 100*time.Millisecond, "rules never evaluated:\n%s", p.logs())
	return out
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 {
		return len(p), nil // enough to diagnose
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
