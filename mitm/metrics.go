package mitm

import "github.com/prometheus/client_golang/prometheus"

// Register adds the leaf cache's counters to reg. The names keep the
// proxy_ subsystem they had when the CA lived in the proxy package, so
// dashboards and alerts stay valid.
func (ca *CA) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "warcproxy_proxy_cert_cache_hits_total",
			Help: "Leaf certificates found in the cache.",
		}, func() float64 { h, _ := ca.CacheStats(); return float64(h) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "warcproxy_proxy_cert_cache_misses_total",
			Help: "Leaf certificates loaded from --certs-dir or generated.",
		}, func() float64 { _, m := ca.CacheStats(); return float64(m) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Status is the CA's part of /status.
func (ca *CA) Status() map[string]any {
	hits, misses := ca.CacheStats()
	return map[string]any{"cert_cache_hits": hits, "cert_cache_misses": misses}
}
