package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrRecordsCheck is returned by Sweep (after every case ran) when some
// proxy's WARCs did not hold one capture record per successful request, or
// a proxy did not exit cleanly.
var ErrRecordsCheck = errors.New("records check failed")

// Row kinds.
const (
	KindDirect = "direct"   // load straight to the origin
	KindNoWARC = "prefix=-" // proxy started with --prefix -: proxying without recording
	KindProxy  = "proxy"    // proxy recording WARCs
)

// SweepConfig is a grid of cases: every combination of the lists.
type SweepConfig struct {
	ProxyBin string        // the warcproxy binary
	OutDir   string        // CA file and per-case WARC dirs go here
	Keep     bool          // keep the per-case WARC dirs
	Duration time.Duration // per case (or N)
	N        int64         // per case (or Duration)
	Timeout  time.Duration // per request; 0: 30s

	MaxConns      []int
	WriterWorkers []int
	Compression   []string // proxy --compression: gzip, zstd, none
	GzipLevel     []int    // with gzip
	ZstdLevel     []int    // with zstd
	Concurrency   []int
	Size          []string // body sizes, as given (16KB); parsed by ParseSize
	Text          []bool   // text-like (compressible) bodies
	Mode          []string // ModeKeepAlive, ModeNewConn
	TLS           []bool   // HTTPS through the MITM, or plain HTTP
	Path          string   // overrides /bytes/SIZE, e.g. /delay/100
	ExtraArgs     []string // passed to every proxy
	Baselines     bool     // direct and prefix=- rows per load group

	// Defaults are the single values a dimension is left out of the
	// setting label for (when the sweep doesn't vary it); keys as in
	// the label ("conns", "workers", "gzip", ...). Nil: DefaultSweepLabels.
	Defaults map[string]string

	// Row, if not nil, is called with each row as it finishes.
	Row    func(SweepRow)
	Logger *slog.Logger // nil: discard
}

// DefaultSweepLabels are the label values of warcbench sweep's defaults.
var DefaultSweepLabels = map[string]string{
	"conns": "1000", "compression": "gzip", "level": "0", "zstd-level": "3", "c": "50", "size": "16KB",
	"text": "false", "mode": ModeKeepAlive, "tls": "false",
}

// compressions are the proxy's --compression values.
var compressions = []string{"gzip", "zstd", "none"}

// Validate checks the grid.
func (c *SweepConfig) Validate() error {
	var errs []error
	if c.ProxyBin == "" && c.proxyCases() > 0 {
		errs = append(errs, errors.New("no proxy binary"))
	}
	if c.OutDir == "" {
		errs = append(errs, errors.New("no output dir"))
	}
	if c.N < 0 || c.Duration < 0 || (c.N == 0 && c.Duration == 0) {
		errs = append(errs, errors.New("give a positive -n or --duration"))
	}
	for name, l := range map[string]int{
		"max-conns": len(c.MaxConns), "writer-workers": len(c.WriterWorkers), "compression": len(c.Compression),
		"gzip-level": len(c.GzipLevel), "zstd-level": len(c.ZstdLevel), "concurrency": len(c.Concurrency), "text": len(c.Text),
		"mode": len(c.Mode), "tls": len(c.TLS),
	} {
		if l == 0 {
			errs = append(errs, fmt.Errorf("--%s: no values", name))
		}
	}
	for _, cp := range c.Compression {
		if !slices.Contains(compressions, cp) {
			errs = append(errs, fmt.Errorf("compression %q: %s", cp, strings.Join(compressions, ", ")))
		}
	}
	if c.Path == "" && len(c.Size) == 0 {
		errs = append(errs, errors.New("--size: no values"))
	}
	for _, s := range c.Size {
		if _, err := ParseSize(s); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Path != "" && !strings.HasPrefix(c.Path, "/") {
		errs = append(errs, fmt.Errorf("--path %q: must start with /", c.Path))
	}
	for _, n := range c.Concurrency {
		if n < 1 {
			errs = append(errs, fmt.Errorf("concurrency %d: must be at least 1", n))
		}
	}
	for _, m := range c.Mode {
		if m != ModeKeepAlive && m != ModeNewConn {
			errs = append(errs, fmt.Errorf("mode %q: %s or %s", m, ModeKeepAlive, ModeNewConn))
		}
	}
	return errors.Join(errs...)
}

func (c *SweepConfig) proxyCases() int {
	return len(c.proxySettings())
}

// SweepRow is one case's measurements.
type SweepRow struct {
	Setting      string
	Kind         string // KindDirect, KindNoWARC, KindProxy
	URLs         int64  // successful requests
	Requests     int64
	URLsPerSec   float64
	MBPerSec     float64 // body bytes, 10^6
	WARCMBps     float64 // WARC file bytes / (load + drain), 10^6; proxy rows
	WARCKBPerURL float64 // WARC file bytes / URLs, 10^3: what compression left on disk (.warc.gz or .warc.zst); proxy rows
	P50, P99     float64 // ms
	CPUSec       float64 // proxy user+system CPU; proxy rows
	PeakRSSMB    float64 // proxy VmHWM, 2^20; proxy rows
	DrainSec     float64 // SIGTERM to exit; proxy rows
	Records      int64   // response (and revisit) records found; KindProxy
	// RecordsOK is "true" or "false" for KindProxy rows, "-" otherwise.
	RecordsOK string
	Note      string // why a check failed
	// Case is this row's value of each workload column (Workload.Columns),
	// absent where a column does not apply (proxy flags on direct rows).
	Case map[string]string
}

// loadGroup is one load shape; every proxy setting runs it.
type loadGroup struct {
	size        string
	text, tls   bool
	mode        string
	concurrency int
}

type proxySetting struct {
	maxConns, workers int
	compression       string
	level             int // --gzip-level or --zstd-level, as the compression is; 0 with none
}

// Sweep runs every case one after another: per load group the baselines
// (when asked) and then each proxy setting. It returns the rows, and an
// error wrapping ErrRecordsCheck if any records check failed; other errors
// (the origin, the output dir) stop it early.
func Sweep(ctx context.Context, cfg SweepConfig) ([]SweepRow, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg.Timeout = cfg.timeout()
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("making output dir: %w", err)
	}
	absOut, err := filepath.Abs(cfg.OutDir)
	if err != nil {
		return nil, fmt.Errorf("output dir: %w", err)
	}
	srv, stopOrigin, err := startSweepOrigin(&cfg, logger)
	if err != nil {
		return nil, err
	}
	defer stopOrigin()

	wl := cfg.Workload()
	var rows []SweepRow
	failed, proxyCases := 0, 0
	for _, sc := range cfg.plan() {
		run, err := cfg.groupRun(srv, sc.group)
		if err != nil {
			return rows, err
		}
		var r SweepRow
		if sc.kind == KindDirect {
			res, err := Run(ctx, run)
			if err != nil {
				return rows, fmt.Errorf("direct load: %w", err)
			}
			r = loadRow(res)
			r.RecordsOK = "-"
		} else {
			proxyCases++
			r, err = runProxyCase(ctx, &cfg, absOut, proxyCases, run, sc.setting, sc.kind == KindNoWARC, logger)
			if err != nil {
				return rows, err
			}
		}
		r.Kind, r.Setting, r.Case = sc.kind, sc.label, wl.caseValues(sc.kind, sc.group, sc.setting)
		rows = append(rows, r)
		if r.RecordsOK == "false" {
			failed++
		}
		if cfg.Row != nil {
			cfg.Row(r)
		}
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
	}
	if failed > 0 {
		return rows, fmt.Errorf("%w: %d of %d proxy cases", ErrRecordsCheck, failed, countKind(rows, KindProxy))
	}
	return rows, nil
}

// sweepCase is one row to be: its kind, load and proxy flags (the first
// setting for prefix=-, none for direct) and its setting label.
type sweepCase struct {
	kind    string
	group   loadGroup
	setting proxySetting
	label   string
}

// plan is every case in the order they run: per load group the baselines
// (when asked) and then each proxy setting.
func (c *SweepConfig) plan() []sweepCase {
	cfg := *c
	if cfg.Defaults == nil {
		cfg.Defaults = DefaultSweepLabels
	}
	lab := labeler{cfg: &cfg}
	settings := cfg.proxySettings()
	var cases []sweepCase
	for _, g := range cfg.loadGroups() {
		if cfg.Baselines && len(settings) > 0 {
			ps := settings[0]
			cases = append(cases,
				sweepCase{KindDirect, g, proxySetting{}, lab.label(KindDirect, g, nil)},
				sweepCase{KindNoWARC, g, ps, lab.label(KindNoWARC, g, &ps)})
		}
		for _, ps := range settings {
			cases = append(cases, sweepCase{KindProxy, g, ps, lab.label(KindProxy, g, &ps)})
		}
	}
	return cases
}

// SettingLabels are the setting labels of the rows the sweep will make,
// in order: a table can be as wide as its widest before the first row.
func (c *SweepConfig) SettingLabels() []string {
	var labels []string
	for _, sc := range c.plan() {
		labels = append(labels, sc.label)
	}
	return labels
}

// timeout is the per-request timeout: Timeout, or 30s.
func (c *SweepConfig) timeout() time.Duration {
	if c.Timeout <= 0 {
		return 30 * time.Second
	}
	return c.Timeout
}

// startSweepOrigin starts the origin every case loads, with an HTTPS
// listener only if some case uses TLS; stop shuts it down and waits.
func startSweepOrigin(cfg *SweepConfig, logger *slog.Logger) (srv *OriginServer, stop func(), err error) {
	tlsPort := -1
	for _, t := range cfg.TLS {
		if t {
			tlsPort = 0
		}
	}
	srv, err = ListenOrigin(OriginConfig{Address: "127.0.0.1", TLSPort: tlsPort}, logger.With("component", "origin"))
	if err != nil {
		return nil, nil, fmt.Errorf("starting the origin: %w", err)
	}
	octx, stopOrigin := context.WithCancel(context.Background())
	var owg sync.WaitGroup
	owg.Go(func() { _ = srv.Serve(octx) })
	return srv, func() { stopOrigin(); owg.Wait() }, nil
}

// loadGroups is every combination of the load dimensions, in the order
// the cases run.
func (c *SweepConfig) loadGroups() []loadGroup {
	sizes := c.Size
	if c.Path != "" {
		sizes = []string{""}
	}
	var groups []loadGroup
	for _, size := range sizes {
		for _, text := range c.Text {
			for _, mode := range c.Mode {
				for _, tl := range c.TLS {
					for _, n := range c.Concurrency {
						groups = append(groups, loadGroup{size, text, tl, mode, n})
					}
				}
			}
		}
	}
	return groups
}

// proxySettings is every combination of the proxy's flags, in the order
// the cases run.
func (c *SweepConfig) proxySettings() []proxySetting {
	var settings []proxySetting
	for _, mc := range c.MaxConns {
		for _, w := range c.WriterWorkers {
			for _, cp := range c.Compression {
				levels := []int{0} // a level means nothing without compression
				switch cp {
				case "gzip":
					levels = c.GzipLevel
				case "zstd":
					levels = c.ZstdLevel
				}
				for _, l := range levels {
					settings = append(settings, proxySetting{mc, w, cp, l})
				}
			}
		}
	}
	return settings
}

// groupRun is the load of one group against srv: /bytes/SIZE (or Path),
// text-like bodies on request, over HTTPS for a TLS group.
func (c *SweepConfig) groupRun(srv *OriginServer, g loadGroup) (RunConfig, error) {
	base := "http://" + srv.HTTP.Addr().String()
	if g.tls {
		base = "https://" + srv.HTTPS.Addr().String()
	}
	path := c.Path
	if path == "" {
		path = "/bytes/" + g.size
	}
	if g.text {
		if strings.Contains(path, "?") {
			path += "&text=1"
		} else {
			path += "?text=1"
		}
	}
	target, err := ParseTarget(base + path)
	if err != nil {
		return RunConfig{}, err
	}
	return RunConfig{
		Targets: []Target{target}, Duration: c.Duration, N: c.N, Concurrency: g.concurrency,
		Method: "GET", Mode: g.mode, Timeout: c.Timeout, Insecure: true,
	}, nil
}

func countKind(rows []SweepRow, kind string) int {
	n := 0
	for _, r := range rows {
		if r.Kind == kind {
			n++
		}
	}
	return n
}

func loadRow(res *Result) SweepRow {
	s := res.Summary()
	return SweepRow{
		URLs: s.Successes, Requests: s.Requests, URLsPerSec: s.URLsPerSec, MBPerSec: s.MBPerSec,
		P50: s.LatencyP50, P99: s.LatencyP99,
	}
}
