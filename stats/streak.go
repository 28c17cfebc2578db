package stats

import "sync"

// streak tracks a run of failures, so that each run is logged once.
type streak struct {
	mu   sync.Mutex
	n    int
	last error
}

// fail records a failure and reports whether it starts a streak.
func (s *streak) fail(err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	s.last = err
	return s.n == 1
}

// ok ends a streak and returns how many failures it had.
func (s *streak) ok() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.n
	s.n, s.last = 0, nil
	return n
}

func (s *streak) state() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n, s.last
}
