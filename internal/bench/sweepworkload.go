package bench

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// Workload is what a sweep measured: every dimension of its grid with the
// values it took, in the order of the CSV's workload columns. A dimension
// with one value was held fixed, and the chart's title and caption say it;
// the others are in each row's setting label.
type Workload struct {
	dims []dim
}

// dim is one dimension of a sweep: a CSV column with a value per row.
type dim struct {
	column string
	scope  dimScope
	// values are those the sweep took, as the CSV writes them; one: held
	// fixed; none: not used (no -n, no extra args), only a blank column.
	values []string
	// of is the value of one case.
	of func(g loadGroup, ps proxySetting) string
}

// dimScope is which rows a dimension applies to; on the others its column
// is blank.
type dimScope int

const (
	scopeAll       dimScope = iota // the load and the machine: every row
	scopeProxy                     // a proxy flag: prefix=- and proxy rows
	scopeRecording                 // matters only when recording: proxy rows
)

// Workload describes the grid c runs, with the CPU count of this machine.
func (c *SweepConfig) Workload() Workload {
	return Workload{dims: append(c.loadDims(), c.proxyDims()...)}
}

func (c *SweepConfig) loadDims() []dim {
	size := dim{column: "body size", values: c.Size, of: func(g loadGroup, _ proxySetting) string { return g.size }}
	if c.Path != "" {
		size = dim{column: "path", values: []string{c.Path}, of: func(loadGroup, proxySetting) string { return c.Path }}
	}
	return []dim{
		size,
		{column: "text body", values: formatBools(c.Text), of: func(g loadGroup, _ proxySetting) string { return strconv.FormatBool(g.text) }},
		{column: "concurrency", values: formatInts(c.Concurrency), of: func(g loadGroup, _ proxySetting) string { return strconv.Itoa(g.concurrency) }},
		{column: "client mode", values: c.Mode, of: func(g loadGroup, _ proxySetting) string { return g.mode }},
		{column: "tls", values: formatBools(c.TLS), of: func(g loadGroup, _ proxySetting) string { return strconv.FormatBool(g.tls) }},
		fixedDim("duration s", c.Duration.Seconds()),
		fixedDim("n", float64(c.N)),
		fixedDim("timeout s", c.timeout().Seconds()),
		fixedDim("cpus", float64(runtime.NumCPU())),
	}
}

func (c *SweepConfig) proxyDims() []dim {
	dims := []dim{
		{column: "max-conns", scope: scopeProxy, values: formatInts(c.MaxConns),
			of: func(_ loadGroup, ps proxySetting) string { return strconv.Itoa(ps.maxConns) }},
		{column: "writer-workers", scope: scopeRecording, values: formatInts(c.WriterWorkers),
			of: func(_ loadGroup, ps proxySetting) string { return strconv.Itoa(ps.workers) }},
		{column: "compression", scope: scopeRecording, values: c.Compression,
			of: func(_ loadGroup, ps proxySetting) string { return ps.compression }},
	}
	for _, cp := range []struct {
		name   string
		levels []int
	}{{"gzip", c.GzipLevel}, {"zstd", c.ZstdLevel}} {
		d := dim{column: cp.name + "-level", scope: scopeRecording,
			of: func(_ loadGroup, ps proxySetting) string {
				if ps.compression != cp.name {
					return ""
				}
				return strconv.Itoa(ps.level)
			}}
		if slices.Contains(c.Compression, cp.name) {
			d.values = formatInts(cp.levels)
		}
		dims = append(dims, d)
	}
	extra := strings.Join(c.ExtraArgs, " ")
	d := dim{column: "extra args", scope: scopeProxy, of: func(loadGroup, proxySetting) string { return extra }}
	if extra != "" {
		d.values = []string{extra}
	}
	return append(dims, d)
}

// fixedDim is a dimension with one value for the whole sweep, none if v is 0.
func fixedDim(column string, v float64) dim {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	d := dim{column: column, of: func(loadGroup, proxySetting) string {
		if v == 0 {
			return ""
		}
		return s
	}}
	if v != 0 {
		d.values = []string{s}
	}
	return d
}

// Columns are the CSV's workload columns.
func (w Workload) Columns() []string {
	cols := make([]string, len(w.dims))
	for i, d := range w.dims {
		cols[i] = d.column
	}
	return cols
}

// caseValues are one case's value of every column, blank where a
// dimension does not apply to its kind of row.
func (w Workload) caseValues(kind string, g loadGroup, ps proxySetting) map[string]string {
	vals := make(map[string]string, len(w.dims))
	for _, d := range w.dims {
		if (d.scope == scopeProxy && kind == KindDirect) || (d.scope == scopeRecording && kind != KindProxy) {
			continue
		}
		if v := d.of(g, ps); v != "" {
			vals[d.column] = v
		}
	}
	return vals
}

// fixed is the value of a dimension held fixed; ok is false for one that
// varied or was not used.
func (w Workload) fixed(column string) (v string, ok bool) {
	for _, d := range w.dims {
		if d.column == column && len(d.values) == 1 {
			return d.values[0], true
		}
	}
	return "", false
}

// Title says the load every case ran, as far as it was held fixed:
// "URLs/s per setting: 16KB incompressible bodies, concurrency 50,
// keep-alive, plain HTTP, 10s per case".
func (w Workload) Title() string {
	var parts []string
	if p, ok := w.fixed("path"); ok {
		parts = append(parts, "GET "+p)
	}
	if body := w.bodyPhrase(); body != "" {
		parts = append(parts, body)
	}
	if v, ok := w.fixed("concurrency"); ok {
		parts = append(parts, "concurrency "+v)
	}
	if v, ok := w.fixed("client mode"); ok {
		parts = append(parts, map[string]string{ModeKeepAlive: "keep-alive", ModeNewConn: "a new connection per request"}[v])
	}
	if v, ok := w.fixed("tls"); ok {
		parts = append(parts, map[string]string{"true": "HTTPS through the MITM", "false": "plain HTTP"}[v])
	}
	parts = append(parts, w.lengthPhrase())
	return "URLs/s per setting: " + strings.Join(parts, ", ")
}

// bodyPhrase is "16KB incompressible bodies", or as much of it as was
// held fixed.
func (w Workload) bodyPhrase() string {
	var words []string
	if v, ok := w.fixed("body size"); ok {
		words = append(words, v)
	}
	if v, ok := w.fixed("text body"); ok {
		words = append(words, map[string]string{"true": "text (compressible)", "false": "incompressible"}[v])
	}
	if len(words) == 0 {
		return ""
	}
	return strings.Join(append(words, "bodies"), " ")
}

// lengthPhrase is how long each case loaded: "10s per case", "1000
// requests per case" or "10s or 1000 requests per case".
func (w Workload) lengthPhrase() string {
	d, hasD := w.fixed("duration s")
	n, hasN := w.fixed("n")
	if v, err := strconv.ParseFloat(n, 64); err == nil {
		n = groupThousands(v, 0)
	}
	requests := " requests"
	if n == "1" {
		requests = " request"
	}
	switch {
	case hasD && hasN:
		return d + "s or " + n + requests + " per case, whichever ends first"
	case hasN:
		return n + requests + " per case"
	}
	return d + "s per case"
}

// Caption says the rest: the proxy flags held fixed, what varied (and is
// therefore in each bar's label), the request timeout and where it ran.
func (w Workload) Caption() []string {
	var flags, varied []string
	for _, d := range w.dims {
		switch {
		case len(d.values) > 1:
			varied = append(varied, d.column+" "+strings.Join(d.values, ", "))
		case len(d.values) == 1 && d.column == "extra args":
			flags = append(flags, d.values[0])
		case len(d.values) == 1 && d.scope != scopeAll:
			flags = append(flags, "--"+d.column+" "+d.values[0])
		}
	}
	var lines []string
	if len(flags) > 0 {
		lines = append(lines, "proxy: warcproxy "+strings.Join(flags, " "))
	}
	if len(varied) > 0 {
		lines = append(lines, "varied (see the labels): "+strings.Join(varied, "; "))
	}
	timeout, _ := w.fixed("timeout s")
	cpus, _ := w.fixed("cpus")
	return append(lines, fmt.Sprintf("request timeout %ss; origin, proxy and load on 127.0.0.1, %s CPUs", timeout, cpus))
}

func formatInts(ns []int) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = strconv.Itoa(n)
	}
	return out
}

func formatBools(bs []bool) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = strconv.FormatBool(b)
	}
	return out
}
