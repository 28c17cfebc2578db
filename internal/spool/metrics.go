package spool

import "github.com/prometheus/client_golang/prometheus"

// Register adds the spooler's gauges to reg.
func (s *Spooler) Register(reg prometheus.Registerer) error {
	gauge := func(name, help string, f func() int64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return float64(f()) })
	}
	for _, c := range []prometheus.Collector{
		gauge("warcproxy_spool_memory_bytes", "Memory held by captures in progress or queued.", s.MemoryInUse),
		gauge("warcproxy_spool_memory_budget_bytes", "Memory budget for captures (--spool-memory).", s.MemoryBudget),
		gauge("warcproxy_spool_disk_bytes", "Capture bytes spilled to temporary files.", s.DiskInUse),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Status is the spooler's part of /status.
func (s *Spooler) Status() map[string]any {
	return map[string]any{
		"spool_memory_bytes":  s.MemoryInUse(),
		"spool_memory_budget": s.MemoryBudget(),
		"spool_disk_bytes":    s.DiskInUse(),
	}
}
