package app

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/warcproxy/warcproxy/capture"
	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/digest"
	"github.com/warcproxy/warcproxy/internal/warcscan"
	"github.com/warcproxy/warcproxy/proxy"
	"github.com/warcproxy/warcproxy/wire"
	"github.com/warcproxy/warcproxy/writer"
)

// Configuration to component options, one function per component: the
// only place that knows which flag goes where.

// zstdDict is the --zstd-dictionary file's content, read by the caller.
func writerOptions(cfg config.Config, version string, port int, zstdDict []byte, fs writer.FS, onClose func(string), reg prometheus.Registerer) writer.Options {
	// With --prefix -, requests may still name a warc-prefix: the pool
	// needs a default all the same.
	prefix := cfg.Prefix
	if prefix == "-" {
		prefix = writer.DefaultPrefix
	}
	alg, _ := digest.Parse(cfg.DigestAlgorithm) // validated with the config
	return writer.Options{
		Dir:              cfg.Dir,
		Prefix:           prefix,
		FilenameTemplate: cfg.WARCFilename,
		NoOpenSuffix:     cfg.NoWARCOpenSuffix,
		Compression:      warcscan.ByName(cfg.Compression), // validated with the config
		GzipLevel:        cfg.GzipLevel,
		ZstdLevel:        cfg.ZstdLevel,
		ZstdDictionary:   zstdDict,
		WARCVersion:      cfg.WARCVersion,
		Digest:           alg,
		Base32:           cfg.Base32,
		Workers:          cfg.WriterWorkers,
		QueueSize:        cfg.QueueSize,
		QueueMaxBytes:    cfg.QueueMaxBytes,
		RolloverSize:     cfg.RolloverSize,
		RolloverIdle:     cfg.RolloverIdleTime,
		MaxOpenFiles:     cfg.MaxOpenWARCs,
		SubdirPrefix:     cfg.SubdirPrefix,
		FS:               fs,
		OnClose:          onClose,
		Software:         "warcproxy/" + version,
		Port:             port,
		Registerer:       reg,
	}
}

func captureOptions(a *App) capture.Options {
	cfg := a.cfg
	alg, _ := digest.Parse(cfg.DigestAlgorithm)
	o := capture.Options{
		Spooler:             a.spooler,
		HashLanes:           digest.NewLanes(digest.SpareCoreLanes()),
		Queue:               a.pool,
		Digest:              alg,
		Base32:              cfg.Base32,
		WARCVersion:         cfg.WARCVersion,
		WARCProtocol:        cfg.WARCProtocol,
		MethodFilter:        cfg.MethodFilter,
		StoreTimeout:        cfg.StoreTimeout,
		DedupMinTextSize:    cfg.DedupMinTextSize,
		DedupMinBinarySize:  cfg.DedupMinBinarySize,
		DedupOnlyWithBucket: cfg.DedupOnlyWithBucket,
		BlackoutPeriod:      cfg.BlackoutPeriod,
		Registerer:          a.registry,
	}
	// Typed nil pointers must not become non-nil interfaces.
	switch {
	case a.cdx != nil:
		o.Dedup = &dedup.Layered{Local: a.dedup, Remote: a.cdx}
	case a.dedup != nil:
		o.Dedup = a.dedup
	}
	if a.stats != nil {
		o.Stats = a.stats
	}
	if a.crawlLog != nil {
		o.CrawlLog = a.crawlLog
	}
	return o
}

// The writer pool is the front end's Backlog; the guard is here, since
// proxy never imports writer nor writer proxy.
var _ proxy.Backlog = (*writer.Pool)(nil)

func proxyOptions(a *App) proxy.Options {
	cfg := a.cfg
	return proxy.Options{
		CA:               a.ca,
		Capture:          a.capture,
		Backlog:          a.pool,
		Prefix:           cfg.Prefix,
		MaxConns:         cfg.MaxConns,
		ConnWaitTimeout:  cfg.ConnWaitTimeout,
		IdleTimeout:      cfg.IdleTimeout,
		HeaderTimeout:    cfg.HeaderTimeout,
		MaxHeaderBytes:   cfg.MaxHeaderBytes,
		HTTP2:            cfg.HTTP2,
		HTTP2MaxStreams:  cfg.HTTP2MaxStreams,
		QueueFullTimeout: cfg.QueueFullTimeout,
		MaxResourceSize:  cfg.MaxResourceSize,
		FetchTimeout:     cfg.FetchTimeout,
		WebSocket: proxy.WebSocketOptions{
			Messages: cfg.WebSocketMessages, RecordSize: cfg.WebSocketRecordSize, RecordTime: cfg.WebSocketRecordTime,
		},
		Spooler: a.spooler,
		Upstream: wire.Options{
			SocketTimeout:      cfg.SocketTimeout,
			VerifyTLS:          cfg.VerifyUpstreamTLS,
			DenyPrivateTargets: cfg.DenyPrivateTargets,
			Route:              route(cfg),
			TorSOCKS:           cfg.OnionTorSOCKSProxy,
			AllowRenegotiation: cfg.UnsafeLegacyRenegotiation,
		},
		ProxyAuth:      a.authPairs,
		Jobs:           a.jobs.table,
		MetricsAddress: metricsAddress(a),
		Status:         a.statusHandler(),
		Metrics:        a.metricsHandler(),
		Registerer:     a.registry,
	}
}

// metricsAddress is where --metrics-address is bound (its port when it
// asked for 0), or "" without it.
func metricsAddress(a *App) string {
	if addr := a.MetricsAddr(); addr != nil {
		return addr.String()
	}
	return ""
}

// route is the way out to origins; only the proxy's upstream client takes
// it (Redis and the CDX server are reached by their own clients, directly).
func route(cfg config.Config) wire.Route {
	r := wire.Route{SOCKS: cfg.SOCKSProxy, SOCKSUser: cfg.SOCKSProxyUsername, SOCKSPassword: cfg.SOCKSProxyPassword}
	if cfg.UpstreamProxy != "" {
		p, _ := cfg.Parent() // validated with the config
		r.Parent, r.ParentUser, r.ParentPassword = p.Addr, p.User, p.Password
	}
	return r
}

// routeShown describes the route for the start-up log line, without
// credentials.
func routeShown(cfg config.Config) string {
	r := route(cfg)
	switch {
	case r.SOCKS != "":
		return "socks " + r.SOCKS
	case r.Parent != "":
		return "parent " + r.Parent
	}
	return "direct"
}

func cdxOptions(cfg config.Config, version string) dedup.CDXOptions {
	return dedup.CDXOptions{
		URL:           cfg.CDXServerDedup,
		Cookies:       cfg.CDXServerDedupCookies,
		MaxConcurrent: cfg.CDXServerDedupMaxThreads,
		Timeout:       cfg.CDXServerDedupTimeout,
		UserAgent:     "warcproxy/" + version,
	}
}
