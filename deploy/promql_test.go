// Package deploy_test checks the files under deploy/ against the proxy:
// every metric the alerts and the dashboard name exists, promtool accepts
// the configuration and the rules, and a real Prometheus scraping a real
// proxy under load counts exactly what the load generator did.
package deploy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/warcproxy/warcproxy/upload"
)

const (
	goldenFile    = "../internal/app/testdata/metrics.golden"
	alertsFile    = "prometheus/alerts.yml"
	alertsTests   = "prometheus/alerts_test.yml"
	promConfig    = "prometheus/prometheus.yml"
	dashboardFile = "grafana/warcproxy.json"
)

// notOurs are series the alerts and dashboard may use that warcproxy does
// not export, and why.
var notOurs = map[string]string{
	"up":                          "Prometheus' own series for every target",
	"node_filesystem_avail_bytes": "node_exporter (the disk alerts say so)",
	"node_filesystem_size_bytes":  "node_exporter (the disk alerts say so)",
}

// PromQL words that look like identifiers and are not metric names.
// Grouping words are followed by a list of label names, skipped as a whole.
var (
	groupingWords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
	otherKeywords = map[string]bool{
		"bool": true, "and": true, "or": true, "unless": true, "offset": true, "atan2": true, "inf": true, "nan": true,
		// Aggregations can be followed by "by (...)" rather than "(".
		"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
		"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
	}
)

// metricNames returns the metric names a PromQL expression selects, in
// order of appearance. It is a tokenizer, not a parser (the Prometheus
// parser is not in this module's graph): it skips strings, label matchers
// {...}, ranges [...], numbers and durations, Grafana variables ($x,
// ${x}), the label lists after by/without/on/ignoring/group_left/
// group_right, keywords, and identifiers followed by "(" (functions).
// Whatever identifier is left is a metric name.
func metricNames(expr string) ([]string, error) {
	var names []string
	n := len(expr)
	labelList := false // the next "(" holds label names
	for i := 0; i < n; {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#': // comment to the end of the line
			for i < n && expr[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			j, err := skipString(expr, i)
			if err != nil {
				return nil, err
			}
			i = j
		case c == '{' || c == '[' || (c == '(' && labelList):
			j, err := skipBracket(expr, i)
			if err != nil {
				return nil, err
			}
			i = j
			if c == '(' {
				labelList = false
			}
		case c == '$':
			i++
			if i < n && expr[i] == '{' {
				j, err := skipBracket(expr, i)
				if err != nil {
					return nil, err
				}
				i = j
			} else {
				for i < n && isIdent(expr[i]) {
					i++
				}
			}
		case isDigit(c) || (c == '.' && i+1 < n && isDigit(expr[i+1])):
			// 0.99, 1e3, 0x1f, 5m, 1h30m
			for i < n && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < n && isIdent(expr[j]) {
				j++
			}
			word := expr[i:j]
			k := j
			for k < n && (expr[k] == ' ' || expr[k] == '\t' || expr[k] == '\n' || expr[k] == '\r') {
				k++
			}
			switch {
			case groupingWords[word]:
				labelList = k < n && expr[k] == '('
			case otherKeywords[word], k < n && expr[k] == '(':
				// a keyword or a function call
			default:
				names = append(names, word)
			}
			i = j
		default: // operators, "(", ")", ","
			i++
		}
	}
	return names, nil
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c == ':' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isIdent(c byte) bool      { return isIdentStart(c) || isDigit(c) }

// skipString returns the index after the string literal starting at i.
func skipString(s string, i int) (int, error) {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && q != '`':
			j++
		case s[j] == q:
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated string at offset %d in %q", i, s)
}

// skipBracket returns the index after the bracket opened at i and its
// match, with strings and nested brackets inside.
func skipBracket(s string, i int) (int, error) {
	var stack []byte
	for j := i; j < len(s); j++ {
		switch c := s[j]; c {
		case '"', '\'', '`':
			k, err := skipString(s, j)
			if err != nil {
				return 0, err
			}
			j = k - 1
		case '(', '[', '{':
			stack = append(stack, map[byte]byte{'(': ')', '[': ']', '{': '}'}[c])
		case ')', ']', '}':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return 0, fmt.Errorf("unbalanced %q at offset %d in %q", c, j, s)
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return j + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("unclosed %q at offset %d in %q", s[i], i, s)
}

func TestMetricNamesTokenizer(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`rate(a_total[5m])`, []string{"a_total"}},
		{`sum by (kind, le) (rate(a_total{kind="x", job=~"a|b"}[$__rate_interval]))`, []string{"a_total"}},
		{`sum(rate(a_total[1m])) without (result) / on (instance) group_left (version) b_info`, []string{"a_total", "b_info"}},
		{`histogram_quantile(0.99, sum by (le) (rate(h_seconds_bucket{instance=~"$instance"}[5m])))`, []string{"h_seconds_bucket"}},
		{`a > bool 1 and b unless on() c or d offset 1h30m`, []string{"a", "b", "c", "d"}},
		{"a\n  unless on (instance, job)\nsum by (instance, job) (rate(b[10m])) > 0", []string{"a", "b"}},
		{`label_replace(a, "dst", "$1", "src", "(.*)")`, []string{"a"}},
		{`count_values("v", a) + topk(5, b) + quantile(0.9, c) + ${var} + $var + .5e3 + 0x1F`, []string{"a", "b", "c"}},
		{`max_over_time(a[5m:1m]) @ start() + predict_linear(b{m="/x"}[1h], 4 * 3600) < 0`, []string{"a", "b"}},
		{`sum(x) # a comment naming not_a_metric`, []string{"x"}},
		{`ns:rule:rate5m{a="}{"}`, []string{"ns:rule:rate5m"}},
	} {
		got, err := metricNames(c.expr)
		require.NoError(t, err, c.expr)
		require.Equal(t, c.want, got, c.expr)
	}
	for _, bad := range []string{`a{b="c}`, `rate(a[5m)`, `sum by (a`} {
		_, err := metricNames(bad)
		require.Error(t, err, bad)
	}
}

// golden reads internal/app/testdata/metrics.golden: name -> type.
func golden(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(goldenFile)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		require.Len(t, fields, 2, "golden line %q", sc.Text())
		out[fields[0]] = fields[1]
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out)
	return out
}

// uploadMetrics are the metrics of --upload-to's shipper: name -> type,
// gathered from the upload package's own collector. The golden file comes
// from a proxy without a store to ship to, so it does not list them.
func uploadMetrics(t *testing.T) map[string]string {
	t.Helper()
	s := upload.New(upload.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	reg := promclient.NewPedanticRegistry()
	require.NoError(t, reg.Register(s.Collector()))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]string{}
	for _, mf := range mfs {
		out[mf.GetName()] = strings.ToLower(mf.GetType().String())
	}
	require.NotEmpty(t, out)
	return out
}

// exportedTypes is every metric warcproxy exports (name -> type): the
// golden file's and the shipper's, which must agree where both list one.
func exportedTypes(t *testing.T) map[string]string {
	t.Helper()
	types := golden(t)
	for name, typ := range uploadMetrics(t) {
		if g, ok := types[name]; ok {
			require.Equal(t, g, typ, "%s: type in %s vs the upload package", name, goldenFile)
		}
		types[name] = typ
	}
	return types
}

// exported reports whether name is a series a scrape of warcproxy yields.
func exported(name string, types map[string]string) bool {
	if _, ok := types[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if typ := types[base]; typ == "histogram" || (typ == "summary" && suffix != "_bucket") {
				return true
			}
		}
	}
	return strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_")
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// exprSource is one PromQL expression and where it comes from.
type exprSource struct{ where, expr string }

func alertExprs(t *testing.T) (exprs []exprSource, recorded map[string]bool) {
	t.Helper()
	data, err := os.ReadFile(alertsFile)
	require.NoError(t, err)
	var rf ruleFile
	require.NoError(t, yaml.Unmarshal(data, &rf))
	require.NotEmpty(t, rf.Groups)
	recorded = map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			}
			where := alertsFile + ": " + r.Alert + r.Record
			require.NotEmpty(t, r.Expr, where)
			exprs = append(exprs, exprSource{where, r.Expr})
			if r.Alert != "" {
				require.Contains(t, []string{"info", "warning", "critical"}, r.Labels["severity"], "%s: severity label", where)
				require.NotEmpty(t, r.Annotations["summary"], "%s: summary", where)
				require.NotEmpty(t, r.Annotations["description"], "%s: description", where)
			}
		}
	}
	return exprs, recorded
}

// labelValues matches Grafana's label_values(selector, label) variable
// query; the selector is PromQL, the label is not.
var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

func dashboardExprs(t *testing.T) []exprSource {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var dash map[string]any
	require.NoError(t, json.Unmarshal(data, &dash))
	require.NotEmpty(t, dash["uid"], "dashboard uid")
	require.NotEmpty(t, dash["title"], "dashboard title")

	var out []exprSource
	panels, _ := dash["panels"].([]any)
	require.NotEmpty(t, panels)
	var walkPanels func(ps []any)
	walkPanels = func(ps []any) {
		for _, p := range ps {
			pm := p.(map[string]any)
			if sub, ok := pm["panels"].([]any); ok {
				walkPanels(sub) // panels of a collapsed row
			}
			if pm["type"] == "row" {
				continue
			}
			targets, _ := pm["targets"].([]any)
			require.NotEmpty(t, targets, "panel %q has no query", pm["title"])
			for _, tg := range targets {
				e, _ := tg.(map[string]any)["expr"].(string)
				require.NotEmpty(t, e, "panel %q: a target without expr", pm["title"])
				out = append(out, exprSource{fmt.Sprintf("%s: panel %q", dashboardFile, pm["title"]), e})
			}
		}
	}
	walkPanels(panels)

	templating, _ := dash["templating"].(map[string]any)
	vars, _ := templating["list"].([]any)
	for _, v := range vars {
		vm := v.(map[string]any)
		if vm["type"] != "query" {
			continue
		}
		q := vm["definition"].(string)
		if qm, ok := vm["query"].(map[string]any); ok {
			require.Equal(t, q, qm["query"], "variable %q: definition and query differ", vm["name"])
		}
		if m := labelValues.FindStringSubmatch(q); m != nil {
			q = m[1]
		}
		out = append(out, exprSource{fmt.Sprintf("%s: variable %q", dashboardFile, vm["name"]), q})
	}
	return out
}

// TestMetricNamesExist: every metric an alert or a dashboard panel uses is
// one warcproxy exports (internal/app/testdata/metrics.golden, kept in step
// with the code by internal/app's TestMetricsGoldenAndLint, and the
// shipper's metrics from the upload package itself), a Go or process
// collector metric, or one of notOurs. A renamed metric breaks this test
// instead of silently emptying a graph or an alert.
func TestMetricNamesExist(t *testing.T) {
	types := exportedTypes(t)
	alerts, recorded := alertExprs(t)
	all := append(alerts, dashboardExprs(t)...)
	used := map[string]bool{}
	for _, e := range all {
		names, err := metricNames(e.expr)
		require.NoError(t, err, e.where)
		require.NotEmpty(t, names, "%s: no metric in %q", e.where, e.expr)
		for _, name := range names {
			used[name] = true
			if !exported(name, types) && notOurs[name] == "" && !recorded[name] {
				t.Errorf("%s: %q uses %s, which warcproxy does not export (see docs/metrics.md)", e.where, e.expr, name)
			}
		}
	}
	// The brief's must-haves are really there.
	for _, name := range []string{
		"warcproxy_writer_queue_full_seconds", "warcproxy_writer_write_errors_total",
		"warcproxy_proxy_seconds_behind", "warcproxy_proxy_connections_active",
		"warcproxy_proxy_captures_total", "warcproxy_dedup_lookups_total",
		"warcproxy_stats_flush_errors_total", "node_filesystem_avail_bytes",
		"warcproxy_writer_bytes_total", "warcproxy_writer_queue_length", "warcproxy_writer_queue_capacity",
		"warcproxy_proxy_capture_duration_seconds_bucket", "warcproxy_writer_write_duration_seconds_bucket",
		"warcproxy_proxy_connections_waiting", "warcproxy_upstream_errors_total",
		// --upload-to: the backlog, its age, and the store failing.
		"warcproxy_upload_oldest_waiting_seconds", "warcproxy_upload_backlog_bytes", "warcproxy_upload_backlog_files",
		"warcproxy_upload_failures_total", "warcproxy_upload_files_total", "warcproxy_upload_bytes_total",
		"warcproxy_upload_duration_seconds_bucket",
	} {
		require.True(t, used[name], "nothing uses %s", name)
	}
	var list []string
	for n := range used {
		list = append(list, n)
	}
	sort.Strings(list)
	t.Logf("%d expressions use %d metrics: %s", len(all), len(list), strings.Join(list, " "))
}

// lookTool finds an external program the test needs: missing, the test is
// skipped, or fails under CI (.ci/run installs it).
func lookTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not on PATH: install the Debian package prometheus (.ci/run does)", name)
		}
		t.Skipf("%s not on PATH (apt-get install prometheus)", name)
	}
	return path
}

// TestPromtool: Prometheus' own checker accepts the scrape configuration
// (with the rule file it names), the rules, and the rules' unit tests in
// prometheus/alerts_test.yml pass.
func TestPromtool(t *testing.T) {
	promtool := lookTool(t, "promtool")
	for _, args := range [][]string{
		{"check", "config", promConfig},
		{"check", "rules", alertsFile},
		{"test", "rules", alertsTests},
	} {
		t.Run(strings.Join(args[:2], "_"), func(t *testing.T) {
			cmd := exec.Command(promtool, args...)
			cmd.Dir = "."
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
			t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
		})
	}
}

// TestDashboardLayout: panel ids are unique (Grafana keys panel state and
// links by id) and panels sit inside the 24-column grid without covering
// each other, so one added below the others does not hide one.
func TestDashboardLayout(t *testing.T) {
	data, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			ID      int    `json:"id"`
			Title   string `json:"title"`
			GridPos struct {
				X, Y, W, H int
			} `json:"gridPos"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(data, &dash))
	ids := map[int]string{}
	for i, p := range dash.Panels {
		require.NotContains(t, ids, p.ID, "panel %q has the id of %q", p.Title, ids[p.ID])
		ids[p.ID] = p.Title
		g := p.GridPos
		require.True(t, g.X >= 0 && g.W > 0 && g.X+g.W <= 24 && g.Y >= 0 && g.H > 0, "panel %q: gridPos %+v", p.Title, g)
		for _, q := range dash.Panels[:i] {
			h := q.GridPos
			overlap := g.X < h.X+h.W && h.X < g.X+g.W && g.Y < h.Y+h.H && h.Y < g.Y+g.H
			require.False(t, overlap, "panels %q %+v and %q %+v overlap", p.Title, g, q.Title, h)
		}
	}
}
