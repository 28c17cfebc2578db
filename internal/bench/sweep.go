package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nlnwa/gowarc/v3"
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
	Gzip          []bool
	GzipLevel     []int
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
	"conns": "1000", "gzip": "true", "level": "0", "c": "50", "size": "16KB",
	"text": "false", "mode": ModeKeepAlive, "tls": "false",
}

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
		"max-conns": len(c.MaxConns), "writer-workers": len(c.WriterWorkers), "gzip": len(c.Gzip),
		"gzip-level": len(c.GzipLevel), "concurrency": len(c.Concurrency), "text": len(c.Text),
		"mode": len(c.Mode), "tls": len(c.TLS),
	} {
		if l == 0 {
			errs = append(errs, fmt.Errorf("--%s: no values", name))
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
	return len(c.MaxConns) * len(c.WriterWorkers) * len(c.Gzip) * len(c.GzipLevel)
}

// SweepRow is one case's measurements.
type SweepRow struct {
	Setting    string
	Kind       string // KindDirect, KindNoWARC, KindProxy
	URLs       int64  // successful requests
	Requests   int64
	URLsPerSec float64
	MBPerSec   float64 // body bytes, 10^6
	WARCMBps   float64 // WARC file bytes / (load + drain), 10^6; proxy rows
	P50, P99   float64 // ms
	CPUSec     float64 // proxy user+system CPU; proxy rows
	PeakRSSMB  float64 // proxy VmHWM, 2^20; proxy rows
	DrainSec   float64 // SIGTERM to exit; proxy rows
	Records    int64   // response (and revisit) records found; KindProxy
	// RecordsOK is "true" or "false" for KindProxy rows, "-" otherwise.
	RecordsOK string
	Note      string // why a check failed
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
	gzip              bool
	level             int
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
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Defaults == nil {
		cfg.Defaults = DefaultSweepLabels
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("making output dir: %w", err)
	}
	absOut, err := filepath.Abs(cfg.OutDir)
	if err != nil {
		return nil, fmt.Errorf("output dir: %w", err)
	}
	tlsPort := -1
	for _, t := range cfg.TLS {
		if t {
			tlsPort = 0
		}
	}
	srv, err := ListenOrigin("127.0.0.1", 0, tlsPort, logger.With("component", "origin"))
	if err != nil {
		return nil, fmt.Errorf("starting the origin: %w", err)
	}
	octx, stopOrigin := context.WithCancel(context.Background())
	var owg sync.WaitGroup
	owg.Go(func() { _ = srv.Serve(octx) })
	defer func() { stopOrigin(); owg.Wait() }()

	lab := labeler{cfg: &cfg}
	sizes := cfg.Size
	if cfg.Path != "" {
		sizes = []string{""}
	}
	var groups []loadGroup
	for _, size := range sizes {
		for _, text := range cfg.Text {
			for _, mode := range cfg.Mode {
				for _, tl := range cfg.TLS {
					for _, c := range cfg.Concurrency {
						groups = append(groups, loadGroup{size, text, tl, mode, c})
					}
				}
			}
		}
	}
	var settings []proxySetting
	for _, mc := range cfg.MaxConns {
		for _, w := range cfg.WriterWorkers {
			for _, gz := range cfg.Gzip {
				levels := cfg.GzipLevel
				if !gz {
					levels = levels[:1] // the level means nothing without gzip
				}
				for _, l := range levels {
					settings = append(settings, proxySetting{mc, w, gz, l})
				}
			}
		}
	}

	var rows []SweepRow
	failed := 0
	caseNo := 0
	emit := func(r SweepRow) {
		rows = append(rows, r)
		if r.RecordsOK == "false" {
			failed++
		}
		if cfg.Row != nil {
			cfg.Row(r)
		}
	}
	for _, g := range groups {
		base := "http://" + srv.HTTP.Addr().String()
		if g.tls {
			base = "https://" + srv.HTTPS.Addr().String()
		}
		path := cfg.Path
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
			return rows, err
		}
		run := RunConfig{
			Targets: []Target{target}, Duration: cfg.Duration, N: cfg.N, Concurrency: g.concurrency,
			Method: "GET", Mode: g.mode, Timeout: cfg.Timeout, Insecure: true,
		}
		if cfg.Baselines {
			res, err := Run(ctx, run)
			if err != nil {
				return rows, fmt.Errorf("direct load: %w", err)
			}
			r := loadRow(res)
			r.Kind, r.Setting, r.RecordsOK = KindDirect, lab.label(KindDirect, g, nil), "-"
			emit(r)
			caseNo++
			ps := settings[0]
			r, err = runProxyCase(ctx, &cfg, absOut, caseNo, run, ps, true, logger)
			if err != nil {
				return rows, err
			}
			r.Setting = lab.label(KindNoWARC, g, &ps)
			emit(r)
		}
		for _, ps := range settings {
			caseNo++
			r, err := runProxyCase(ctx, &cfg, absOut, caseNo, run, ps, false, logger)
			if err != nil {
				return rows, err
			}
			r.Setting = lab.label(KindProxy, g, &ps)
			emit(r)
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

// labeler makes the compact setting strings: a dimension appears when the
// sweep varies it or its one value is not the default.
type labeler struct{ cfg *SweepConfig }

func (l labeler) show(key string, n int, v string) bool {
	return n > 1 || l.cfg.Defaults[key] != v
}

func (l labeler) label(kind string, g loadGroup, ps *proxySetting) string {
	c := l.cfg
	var parts []string
	add := func(key string, n int, v string) {
		if l.show(key, n, v) {
			parts = append(parts, key+"="+v)
		}
	}
	switch kind {
	case KindDirect:
		parts = append(parts, "direct")
	case KindNoWARC:
		parts = append(parts, "prefix=-")
		add("conns", len(c.MaxConns), strconv.Itoa(ps.maxConns))
	case KindProxy:
		add("conns", len(c.MaxConns), strconv.Itoa(ps.maxConns))
		add("workers", len(c.WriterWorkers), strconv.Itoa(ps.workers))
		add("gzip", len(c.Gzip), strconv.FormatBool(ps.gzip))
		if ps.gzip {
			add("level", len(c.GzipLevel), strconv.Itoa(ps.level))
		}
	}
	if c.Path == "" {
		add("size", len(c.Size), g.size)
	}
	add("text", len(c.Text), strconv.FormatBool(g.text))
	add("mode", len(c.Mode), g.mode)
	add("tls", len(c.TLS), strconv.FormatBool(g.tls))
	add("c", len(c.Concurrency), strconv.Itoa(g.concurrency))
	if len(parts) == 0 {
		return "proxy"
	}
	return strings.Join(parts, " ")
}

var (
	listenRE  = regexp.MustCompile(`msg="warcproxy listening".* port=(\d+)`)
	metricsRE = regexp.MustCompile(`msg="serving /metrics and /status" address=(\S+)`)
)

// proxyProc is a running warcproxy.
type proxyProc struct {
	cmd      *exec.Cmd
	port     string
	metrics  string
	stderr   *tailBuffer
	exited   chan struct{}
	waitErr  error
	peakRSS  int64 // bytes, from VmHWM samples
	cpuTicks int64 // utime+stime from the last sample
	mu       sync.Mutex
}

// startProxy starts the binary and waits for its listening line.
func startProxy(ctx context.Context, bin string, args []string) (*proxyProc, error) {
	cmd := exec.Command(bin, args...)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	cmd.Stdout = io.Discard
	p := &proxyProc{cmd: cmd, stderr: &tailBuffer{max: 8 << 10}, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var once sync.Once
		for sc.Scan() {
			line := sc.Text()
			p.stderr.add(line)
			p.mu.Lock()
			if m := listenRE.FindStringSubmatch(line); m != nil {
				p.port = m[1]
			}
			if m := metricsRE.FindStringSubmatch(line); m != nil {
				p.metrics = m[1]
			}
			// The metrics line follows the listening line.
			if p.port != "" && p.metrics != "" {
				once.Do(func() { close(ready) })
			}
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		_ = pw.Close()
		close(p.exited)
	}()
	go p.sample()
	select {
	case <-ready:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("warcproxy exited at start: %v\n%s", p.waitErr, p.stderr.String())
	case <-time.After(20 * time.Second):
	case <-ctx.Done():
	}
	_ = cmd.Process.Kill()
	<-p.exited
	return nil, fmt.Errorf("warcproxy did not start: %w\n%s", cmp(ctx.Err(), errors.New("no listening line in 20s")), p.stderr.String())
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// sample reads the process's peak RSS and CPU time every 100 ms while it
// lives.
func (p *proxyProc) sample() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	pid := p.cmd.Process.Pid
	for {
		if rss, ok := readVmHWM(pid); ok {
			p.mu.Lock()
			p.peakRSS = max(p.peakRSS, rss)
			p.mu.Unlock()
		}
		if ticks, ok := readCPUTicks(pid); ok {
			p.mu.Lock()
			p.cpuTicks = max(p.cpuTicks, ticks)
			p.mu.Unlock()
		}
		select {
		case <-p.exited:
			return
		case <-t.C:
		}
	}
}

// readVmHWM returns the peak resident set size from /proc/PID/status.
func readVmHWM(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v) // "123456 kB"
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err == nil
			}
		}
	}
	return 0, false
}

// clockTicks is USER_HZ, 100 on every Linux we run on.
const clockTicks = 100

// readCPUTicks returns utime+stime from /proc/PID/stat, in clock ticks.
func readCPUTicks(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads fields 14 and 15 (utime, stime) of a /proc/PID/stat
// line; the command name (field 2) may hold spaces, so count from its ")".
func parseStatCPU(s string) (int64, bool) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return u + st, true
}

// stop sends SIGTERM and waits for the exit; it returns the drain time and
// the exit error (nil for status 0).
func (p *proxyProc) stop(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, fmt.Errorf("sending SIGTERM: %w", err)
	}
	select {
	case <-p.exited:
		return time.Since(start), p.waitErr
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return time.Since(start), fmt.Errorf("no exit within %s of SIGTERM (killed)", timeout)
	}
}

// drainTimeout bounds how long a proxy may take to exit after SIGTERM.
const drainTimeout = 5 * time.Minute

// runProxyCase starts a proxy for one setting, loads through it, stops it
// and checks its WARCs. noWARC starts it with --prefix - and skips the
// check. Only failures to start the proxy are errors; a bad exit or a
// records mismatch is a failed check in the row.
func runProxyCase(ctx context.Context, cfg *SweepConfig, out string, caseNo int, run RunConfig, ps proxySetting, noWARC bool, logger *slog.Logger) (SweepRow, error) {
	dir := filepath.Join(out, fmt.Sprintf("case-%03d", caseNo))
	if err := os.RemoveAll(dir); err != nil {
		return SweepRow{}, fmt.Errorf("clearing %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return SweepRow{}, fmt.Errorf("making %s: %w", dir, err)
	}
	args := []string{
		"--address", "127.0.0.1", "--port", "0", "--dir", dir,
		"--cacert", filepath.Join(out, "warcbench-ca.pem"), "--metrics-address", "127.0.0.1:0",
		"--max-conns", strconv.Itoa(ps.maxConns), "--writer-workers", strconv.Itoa(ps.workers),
		"--gzip=" + strconv.FormatBool(ps.gzip),
		// A fresh dedup and stats database per case, beside its WARCs.
		"--dedup-db", "embedded:" + filepath.Join(dir, "warcproxy.db"),
		"--stats-db", "embedded:" + filepath.Join(dir, "warcproxy.db"),
	}
	if ps.gzip {
		args = append(args, "--gzip-level", strconv.Itoa(ps.level))
	}
	if noWARC {
		args = append(args, "--prefix", "-")
	}
	args = append(args, cfg.ExtraArgs...)
	logger.Debug("starting proxy", "case", caseNo, "args", args)
	p, err := startProxy(ctx, cfg.ProxyBin, args)
	if err != nil {
		return SweepRow{}, err
	}
	run.Proxy = &url.URL{Scheme: "http", Host: "127.0.0.1:" + p.port}
	res, runErr := Run(ctx, run)
	drain, exitErr := p.stop(drainTimeout)

	var r SweepRow
	if runErr != nil {
		return SweepRow{}, fmt.Errorf("load through the proxy: %w", runErr)
	}
	r = loadRow(res)
	r.Kind = KindProxy
	if noWARC {
		r.Kind = KindNoWARC
	}
	r.DrainSec = drain.Seconds()
	p.mu.Lock()
	r.PeakRSSMB = float64(p.peakRSS) / (1 << 20)
	cpu := float64(p.cpuTicks) / clockTicks
	p.mu.Unlock()
	if ps := p.cmd.ProcessState; ps != nil {
		// Exact totals once it has exited: CPU including the drain, and
		// the kernel's own peak RSS (ru_maxrss, in KiB on Linux).
		cpu = max(cpu, (ps.UserTime() + ps.SystemTime()).Seconds())
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			r.PeakRSSMB = max(r.PeakRSSMB, float64(ru.Maxrss)/1024)
		}
	}
	r.CPUSec = cpu

	warcBytes, records, scanErr := scanWARCs(dir)
	if sec := (res.Elapsed + drain).Seconds(); sec > 0 {
		r.WARCMBps = float64(warcBytes) / sec / 1e6
	}
	r.Records = records
	var notes []string
	if exitErr != nil {
		notes = append(notes, fmt.Sprintf("proxy exit: %v", exitErr))
		logger.Warn("proxy did not exit cleanly", "case", caseNo, "err", exitErr, "stderr", p.stderr.String())
	}
	if noWARC {
		r.RecordsOK = "-"
	} else {
		ok := exitErr == nil && scanErr == nil && records == r.URLs
		if scanErr != nil {
			notes = append(notes, fmt.Sprintf("reading warcs: %v", scanErr))
		}
		if records != r.URLs {
			notes = append(notes, fmt.Sprintf("%d records for %d successful requests", records, r.URLs))
		}
		r.RecordsOK = strconv.FormatBool(ok)
	}
	if exitErr != nil && noWARC {
		r.RecordsOK = "false"
	}
	r.Note = strings.Join(notes, "; ")
	if !cfg.Keep && r.RecordsOK != "false" {
		if err := os.RemoveAll(dir); err != nil {
			return r, fmt.Errorf("removing %s: %w", dir, err)
		}
	} else if !cfg.Keep {
		// Keep a failed case's WARCs to look at.
		logger.Info("keeping the warcs of a failed case", "dir", dir)
	}
	return r, nil
}

// scanWARCs sums the sizes of the WARC files under dir and counts their
// response and revisit records (one per capture), reading without
// validation.
// isWARCName reports whether name is a WARC file, closed or still open.
func isWARCName(name string) bool {
	name = strings.TrimSuffix(name, ".open")
	return strings.HasSuffix(name, ".warc") || strings.HasSuffix(name, ".warc.gz")
}

func scanWARCs(dir string) (size, records int64, err error) {
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !isWARCName(d.Name()) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		size += fi.Size()
		n, err := countCaptures(path)
		records += n
		return err
	})
	return size, records, err
}

func countCaptures(path string) (int64, error) {
	r, err := gowarc.NewWarcFileReader(path, 0, gowarc.WithNoValidation())
	if err != nil {
		return 0, fmt.Errorf("opening %s: %w", path, err)
	}
	defer r.Close()
	var n int64
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("reading %s at %d: %w", path, rec.Offset, err)
		}
		if rec.WarcRecord != nil {
			if t := rec.WarcRecord.Type(); t == gowarc.Response || t == gowarc.Revisit {
				n++
			}
		}
		_ = rec.Close()
	}
}

// tailBuffer keeps the last max bytes of lines written to it.
type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (t *tailBuffer) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, line...)
	t.b = append(t.b, '\n')
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
