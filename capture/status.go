package capture

import "time"

// URLsProcessed counts exchanges the stage completed, archived or not.
func (s *Stage) URLsProcessed() int64 {
	var n int64
	for o := range numOutcomes {
		n += s.outcomes[o].Load()
	}
	return n
}

// Status is the stage's part of /status, with warcprox's keys.
func (s *Stage) Status() map[string]any {
	st := map[string]any{
		"urls_processed":      s.URLsProcessed(),
		"urls_not_archived":   s.outcomes[notArchived].Load(),
		"capture_errors":      s.outcomes[failed].Load(),
		"dedup_lookup_errors": s.dedupErrors.Load(),
		// Exchanges started and not yet written (in flight, queued, or
		// waiting for a failing disk); 0 once everything is on disk.
		"captures_pending": s.active.len(),
		// warcprox's view of how far behind the proxy is: the oldest
		// exchange not yet written (in flight, or waiting in the writer
		// queue).
		"earliest_still_active_fetch_start": nil,
		"seconds_behind":                    0.0,
		// warcprox's details of the oldest activity (a Python socket and
		// postfetch plugin); the keys are there for clients that expect
		// them.
		"earliest_still_active_socket":    map[string]any{"socket": nil, "name": nil, "peername": nil, "future_status": nil, "exception": nil},
		"earliest_still_active_postfetch": map[string]any{"url": nil, "postfetch_plugin": nil},
	}
	if t, ok := s.active.earliest(); ok {
		st["earliest_still_active_fetch_start"] = t.UTC().Format(time.RFC3339Nano)
		st["seconds_behind"] = time.Since(t).Seconds()
	}
	return st
}
