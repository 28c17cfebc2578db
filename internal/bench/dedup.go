package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/redisproc"
	"github.com/warcproxy/warcproxy/internal/store"
)

// Dedup backends the bench fills.
const (
	DedupEmbedded = "embedded"
	DedupRedis    = "redis"
)

// DedupConfig says how to fill and measure dedup stores.
type DedupConfig struct {
	Sizes    []int64  // entries to reach, ascending; measured at each
	Backends []string // DedupRedis, DedupEmbedded, in the order run
	// RedisURL is a redis:// server to use; "" starts RedisBin on a
	// loopback port with its default configuration (no persistence).
	RedisURL string
	RedisBin string
	// Dir holds a temporary directory with the bbolt file and the private
	// redis-server's working dir, removed at the end.
	Dir string
	// MaxTime bounds the whole run: each backend gets an equal share of
	// what is left when it starts, stops filling when it is spent and
	// reports the size it reached.
	MaxTime time.Duration
	// Lookups is how many keys are looked up at each size, in batches of
	// 1..MaxLookupBatch keys (uniformly), HitRatio of them digests saved
	// before and the rest new ones, dedup.DefaultLookupers batches in
	// flight as the Index has.
	Lookups        int
	MaxLookupBatch int
	HitRatio       float64
	// NoURLTable opens Redis without its URL table, as the proxy's
	// --dedup-url-table=false.
	NoURLTable bool
	SaveBatch  int           // items per Save, as the Index's (500)
	InFlight   int           // save batches in flight while filling (the last ones go one at a time)
	Settle     time.Duration // wait after a fill before reading used_memory
	// Progress, if not nil, gets a progress line each second (with a
	// carriage return, for a terminal) and a clear at the end.
	Progress io.Writer
	Logger   *slog.Logger // nil: discard
}

// Validate checks the configuration.
func (c *DedupConfig) Validate() error {
	var errs []error
	if len(c.Sizes) == 0 {
		errs = append(errs, errors.New("no sizes"))
	}
	for i, s := range c.Sizes {
		if s <= 0 || (i > 0 && s <= c.Sizes[i-1]) {
			errs = append(errs, fmt.Errorf("sizes %v: want positive sizes in ascending order", c.Sizes))
			break
		}
	}
	if len(c.Backends) == 0 {
		errs = append(errs, errors.New("no backends"))
	}
	for _, b := range c.Backends {
		if b != DedupEmbedded && b != DedupRedis {
			errs = append(errs, fmt.Errorf("backend %q: want %s or %s", b, DedupEmbedded, DedupRedis))
		}
	}
	if c.MaxTime <= 0 {
		errs = append(errs, errors.New("--max-time must be positive"))
	}
	if c.Settle < 0 {
		errs = append(errs, errors.New("--settle must not be negative"))
	}
	if c.Lookups < 1 || c.MaxLookupBatch < 1 || c.SaveBatch < 1 || c.InFlight < 1 {
		errs = append(errs, errors.New("--lookups, --lookup-batch, --save-batch and --in-flight must be at least 1"))
	}
	if c.HitRatio < 0 || c.HitRatio > 1 {
		errs = append(errs, fmt.Errorf("hit ratio %v: want 0 to 1", c.HitRatio))
	}
	return errors.Join(errs...)
}

// DedupPoint is what one backend measured at one size. Rates are per
// second, sizes in bytes, latencies in milliseconds.
type DedupPoint struct {
	Backend string `json:"backend"`
	Target  int64  `json:"target_entries"`
	Entries int64  `json:"entries"` // in the store when measured
	Reached bool   `json:"reached"` // false: --max-time stopped the fill first

	FillSeconds   float64 `json:"fill_seconds"`            // from the previous size to this one
	FillPerSec    float64 `json:"fill_entries_per_second"` // over that step
	SaveBatches   int64   `json:"save_batches"`            // the step's last ones, sent one at a time and timed
	SaveP50       float64 `json:"save_batch_p50_ms"`
	SaveP99       float64 `json:"save_batch_p99_ms"`
	SavePerSec    float64 `json:"save_entries_per_second"` // over those last batches
	Lookups       int64   `json:"lookups"`                 // keys looked up
	LookupBatches int64   `json:"lookup_batches"`
	LookupsPerSec float64 `json:"lookups_per_second"`
	LookupP50     float64 `json:"lookup_batch_p50_ms"`
	LookupP99     float64 `json:"lookup_batch_p99_ms"`
	HitsAsked     int64   `json:"hits_asked"`
	HitsFound     int64   `json:"hits_found"`      // should equal HitsAsked
	FalseHits     int64   `json:"false_hits"`      // new digests found: should be 0
	BytesPerEntry float64 `json:"bytes_per_entry"` // Redis: used_memory delta; embedded: file size

	// Redis only.
	UsedMemoryDelta  int64   `json:"used_memory_delta,omitempty"`
	Keys             int64   `json:"keys,omitempty"`                   // under the bench's prefix
	KeySample        int     `json:"key_sample,omitempty"`             // keys asked MEMORY USAGE
	KeyBytesMean     float64 `json:"memory_usage_mean,omitempty"`      // of those keys
	KeyBytesPerEntry float64 `json:"memory_usage_per_entry,omitempty"` // mean × keys / entries
	// Embedded only.
	FileBytes int64 `json:"file_bytes,omitempty"`
}

// DedupResult is what a dedup bench measured.
type DedupResult struct {
	Setup      DedupSetup   `json:"setup"`
	Points     []DedupPoint `json:"points"`
	URLMeanLen float64      `json:"url_mean_length"`   // of the generated URLs
	Stopped    []string     `json:"stopped,omitempty"` // backends --max-time stopped, and where
	ElapsedSec float64      `json:"elapsed_seconds"`
}

// DedupSetup is the shape of the load, for the report.
type DedupSetup struct {
	Lookups        int     `json:"lookups_per_size"`
	HitRatio       float64 `json:"hit_ratio"`
	MaxLookupBatch int     `json:"max_lookup_batch"`
	Lookupers      int     `json:"lookup_batches_in_flight"`
	SaveBatch      int     `json:"save_batch"`
	InFlight       int     `json:"save_batches_in_flight"`
	URLTable       bool    `json:"url_table"`
}

// RunDedup fills each backend to each size and measures it there.
func RunDedup(ctx context.Context, cfg DedupConfig) (*DedupResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	tmp, err := os.MkdirTemp(cfg.Dir, "warcbench-dedup-")
	if err != nil {
		return nil, fmt.Errorf("making a temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	end := start.Add(cfg.MaxTime)
	res := &DedupResult{URLMeanLen: meanURLLen(), Setup: DedupSetup{
		Lookups: cfg.Lookups, HitRatio: cfg.HitRatio, MaxLookupBatch: cfg.MaxLookupBatch,
		Lookupers: dedup.DefaultLookupers, SaveBatch: cfg.SaveBatch, InFlight: cfg.InFlight,
		URLTable: !cfg.NoURLTable,
	}}
	live := newDedupLive()
	if cfg.Progress != nil {
		stop := live.report(cfg.Progress)
		defer stop()
	}
	for i, b := range cfg.Backends {
		share := time.Until(end) / time.Duration(len(cfg.Backends)-i)
		pts, stopped, err := runDedupBackend(ctx, &cfg, b, tmp, time.Now().Add(share), live)
		res.Points = append(res.Points, pts...)
		if stopped != "" {
			res.Stopped = append(res.Stopped, stopped)
		}
		res.ElapsedSec = time.Since(start).Seconds()
		if err != nil {
			return res, fmt.Errorf("%s: %w", b, err)
		}
	}
	return res, nil
}

// runDedupBackend opens a fresh store of one backend and measures it at
// each size until deadline.
func runDedupBackend(ctx context.Context, cfg *DedupConfig, backend, tmp string, deadline time.Time, live *dedupLive) (pts []DedupPoint, stopped string, err error) {
	r := &dedupRun{cfg: cfg, backend: backend, deadline: deadline, live: live, hosts: dedupHostNames(), sample: newReservoir(dedupSampleSize)}
	spec, cleanup, err := r.open(ctx, tmp)
	if err != nil {
		return nil, "", err
	}
	defer func() {
		if cerr := cleanup(); err == nil {
			err = cerr
		}
	}()
	cfg.Logger.Info("filling", "backend", backend, "spec", spec, "sizes", cfg.Sizes, "until", deadline.Format(time.TimeOnly))
	for _, size := range cfg.Sizes {
		p, err := r.measure(ctx, size)
		if err != nil {
			return pts, "", err
		}
		pts = append(pts, p)
		cfg.Logger.Info("measured", "backend", backend, "entries", p.Entries, "bytes_per_entry", p.BytesPerEntry,
			"lookups_per_second", p.LookupsPerSec, "lookup_p99_ms", p.LookupP99, "save_p99_ms", p.SaveP99)
		if !p.Reached {
			return pts, fmt.Sprintf("%s: --max-time stopped the fill at %d of %d entries", backend, p.Entries, size), nil
		}
	}
	return pts, "", nil
}

// dedupRun is one backend being filled and measured.
type dedupRun struct {
	cfg      *DedupConfig
	backend  string
	deadline time.Time
	live     *dedupLive
	hosts    []string
	seeds    uint64 // generators made so far, to seed the next one

	store    dedup.Store
	probe    *redisProbe // Redis only
	boltPath string      // embedded only
	baseMem  int64       // Redis used_memory before the fill
	baseKeys int64       // Redis keys before the fill

	entries int64      // saved so far
	sample  *reservoir // of the digests saved, for the hits
}

// open opens the store (starting a redis-server when none is given) and
// returns its spec and what to call at the end.
func (r *dedupRun) open(ctx context.Context, tmp string) (string, func() error, error) {
	var spec string
	var closers []func() error
	cleanup := func() error {
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i]())
		}
		return errors.Join(errs...)
	}
	switch r.backend {
	case DedupEmbedded:
		r.boltPath = filepath.Join(tmp, "dedup.db")
		spec = "embedded:" + r.boltPath
		closers = append(closers, func() error { return os.Remove(r.boltPath) })
	case DedupRedis:
		u := r.cfg.RedisURL
		if u == "" {
			dir := filepath.Join(tmp, "redis")
			if err := os.Mkdir(dir, 0o700); err != nil {
				return "", nil, err
			}
			srv, err := redisproc.Start(r.cfg.RedisBin, dir)
			if err != nil {
				return "", nil, err
			}
			closers = append(closers, func() error { srv.Kill(); return nil })
			u = srv.URL()
		}
		s, prefix, err := benchRedisURL(u, r.cfg.RedisURL == "")
		if err != nil {
			return "", nil, errors.Join(err, cleanup())
		}
		if r.probe, err = newRedisProbe(u, prefix); err != nil {
			return "", nil, errors.Join(err, cleanup())
		}
		closers = append(closers, r.probe.close)
		if r.cfg.RedisURL != "" {
			// A server of the user's: leave it as it was.
			closers = append(closers, func() error { return r.probe.removeKeys(context.WithoutCancel(ctx)) })
		}
		if r.baseMem, err = r.probe.usedMemory(ctx); err == nil {
			r.baseKeys, err = r.probe.dbSize(ctx)
		}
		if err != nil {
			return "", nil, errors.Join(err, cleanup())
		}
		spec = s
	}
	sp, err := store.Parse(spec)
	if err == nil {
		r.store, err = dedup.OpenLayout(sp, nil, dedup.Layout{NoURLTable: r.cfg.NoURLTable})
	}
	if err != nil {
		return "", nil, errors.Join(fmt.Errorf("opening the dedup store: %w", err), cleanup())
	}
	closers = append(closers, r.store.Close)
	return sp.Raw, cleanup, nil
}

// measure fills the store to size (or until the deadline) and measures it.
func (r *dedupRun) measure(ctx context.Context, size int64) (DedupPoint, error) {
	p := DedupPoint{Backend: r.backend, Target: size}
	fs, err := r.fill(ctx, size)
	if err == nil {
		err = ctx.Err() // interrupted: not a size to report
	}
	if err != nil {
		return p, err
	}
	p.Entries, p.Reached = r.entries, r.entries >= size
	p.FillSeconds = fs.elapsed.Seconds()
	if fs.elapsed > 0 {
		p.FillPerSec = float64(fs.saved) / fs.elapsed.Seconds()
	}
	p.SaveBatches = int64(fs.window.Count())
	p.SaveP50, p.SaveP99 = ms(fs.window.Quantile(0.5)), ms(fs.window.Quantile(0.99))
	if fs.windowTime > 0 {
		p.SavePerSec = float64(fs.windowEntries) / fs.windowTime.Seconds()
	}
	if err := r.size(ctx, &p); err != nil {
		return p, err
	}
	ls, err := r.lookups(ctx)
	if err != nil {
		return p, err
	}
	p.Lookups, p.LookupBatches = ls.keys, int64(ls.hist.Count())
	p.LookupP50, p.LookupP99 = ms(ls.hist.Quantile(0.5)), ms(ls.hist.Quantile(0.99))
	if ls.elapsed > 0 {
		p.LookupsPerSec = float64(ls.keys) / ls.elapsed.Seconds()
	}
	p.HitsAsked, p.HitsFound, p.FalseHits = ls.hitsAsked, ls.hitsFound, ls.falseHits
	return p, nil
}

// size reads what the entries cost: Redis memory, or the bbolt file.
func (r *dedupRun) size(ctx context.Context, p *DedupPoint) error {
	if p.Entries == 0 {
		return nil
	}
	if r.probe == nil {
		fi, err := os.Stat(r.boltPath)
		if err != nil {
			return err
		}
		p.FileBytes = fi.Size()
		p.BytesPerEntry = float64(fi.Size()) / float64(p.Entries)
		return nil
	}
	r.live.set(r.backend+" settling", 0, 0)
	settle(ctx, r.cfg.Settle)
	mem, err := r.probe.usedMemory(ctx)
	if err != nil {
		return err
	}
	keys, err := r.probe.dbSize(ctx)
	if err != nil {
		return err
	}
	p.UsedMemoryDelta, p.Keys = mem-r.baseMem, keys-r.baseKeys
	p.BytesPerEntry = float64(p.UsedMemoryDelta) / float64(p.Entries)
	if p.KeyBytesMean, p.KeySample, err = r.probe.sampleKeyBytes(ctx); err != nil {
		return err
	}
	p.KeyBytesPerEntry = p.KeyBytesMean * float64(p.Keys) / float64(p.Entries)
	return nil
}

// newGen returns a generator seeded apart from every other of the run.
func (r *dedupRun) newGen() *entryGen {
	r.seeds++
	return newEntryGen(uint64(time.Now().UnixNano())+r.seeds*0x100000001b3, r.hosts)
}

// meanURLLen is the mean length of the generated URLs, over a sample.
func meanURLLen() float64 {
	g := newEntryGen(1, dedupHostNames())
	const n = 10000
	total := 0
	for range n {
		total += len(g.url())
	}
	return float64(total) / n
}
