package jobs

import (
	"fmt"
	"slices"
)

// Table is one loaded jobs file. It is never changed once loaded: a
// reload builds a new one, and connections keep the job they started with.
type Table struct {
	// AllowAnonymous: requests without credentials on the main port go
	// through as belonging to no job.
	AllowAnonymous bool
	jobs           []*Job
	byName         map[string]*Job
	byPort         map[int]*Job
}

func newTable(allowAnonymous bool) *Table {
	return &Table{AllowAnonymous: allowAnonymous, byName: map[string]*Job{}, byPort: map[int]*Job{}}
}

func (t *Table) add(j *Job) error {
	if t.byName[j.Name] != nil {
		return fmt.Errorf("name %q given twice", j.Name)
	}
	if j.Port != 0 {
		if other := t.byPort[j.Port]; other != nil {
			return fmt.Errorf("port %d is job %q's already", j.Port, other.Name)
		}
		t.byPort[j.Port] = j
	}
	t.byName[j.Name] = j
	t.jobs = append(t.jobs, j)
	return nil
}

// Named is the job a proxy user name selects, or nil.
func (t *Table) Named(name string) *Job {
	if t == nil {
		return nil
	}
	return t.byName[name]
}

// OnPort is the job whose port a connection arrived on, or nil.
func (t *Table) OnPort(port int) *Job {
	if t == nil {
		return nil
	}
	return t.byPort[port]
}

// Ports are the jobs' own listening ports, in increasing order.
func (t *Table) Ports() []int {
	if t == nil {
		return nil
	}
	ports := make([]int, 0, len(t.byPort))
	for p := range t.byPort {
		ports = append(ports, p)
	}
	slices.Sort(ports)
	return ports
}

// Jobs are the jobs in the file's order.
func (t *Table) Jobs() []*Job {
	if t == nil {
		return nil
	}
	return t.jobs
}
