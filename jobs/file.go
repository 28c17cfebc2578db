// Package jobs is the table of crawl jobs an operator gives with --jobs:
// which proxy credentials or port a request arrives with decides its job,
// and the job's Warcprox-Meta applies to it as if the crawler had sent the
// header. The front end asks the table (Named, OnPort) and the job
// (Meta); the wiring loads the file (Load) and swaps the table on SIGHUP.
package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// fileDoc is the jobs file as written.
type fileDoc struct {
	// AllowAnonymous lets requests without credentials on the main port
	// through as belonging to no job (the crawler's own Warcprox-Meta, or
	// none). Off, they are challenged with a 407, which is what makes a
	// browser send the credentials it was given.
	AllowAnonymous bool     `yaml:"allow-anonymous"`
	Jobs           []jobDoc `yaml:"jobs"`
}

type jobDoc struct {
	Name         string    `yaml:"name"`
	Password     string    `yaml:"password"`
	Port         int       `yaml:"port"`
	WarcproxMeta yaml.Node `yaml:"warcprox-meta"`
	Locked       []string  `yaml:"locked"`
}

// Load reads and checks the jobs file at path. checkPrefix is the
// writer's rule for a warc-prefix (a job's must name files).
func Load(path string, checkPrefix func(string) error) (*Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading jobs file: %w", err)
	}
	t, err := Parse(data, checkPrefix)
	if err != nil {
		return nil, fmt.Errorf("jobs file %s: %w", path, err)
	}
	return t, nil
}

// Parse reads a jobs file's content.
func Parse(data []byte, checkPrefix func(string) error) (*Table, error) {
	var doc fileDoc
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty: want a list under \"jobs:\"")
		}
		return nil, fmt.Errorf("not a jobs file: %w", err)
	}
	if len(doc.Jobs) == 0 {
		return nil, errors.New("no jobs: want a list under \"jobs:\"")
	}
	t := newTable(doc.AllowAnonymous)
	for i, jd := range doc.Jobs {
		j, err := jd.job(checkPrefix)
		if err != nil {
			return nil, fmt.Errorf("job %d (%s): %w", i+1, jd.shownName(), err)
		}
		if err := t.add(j); err != nil {
			return nil, fmt.Errorf("job %d (%s): %w", i+1, jd.shownName(), err)
		}
	}
	return t, nil
}

func (jd *jobDoc) shownName() string {
	if jd.Name == "" {
		return "no name"
	}
	return fmt.Sprintf("%q", jd.Name)
}

// job checks one entry and builds its Job.
func (jd *jobDoc) job(checkPrefix func(string) error) (*Job, error) {
	if err := checkName(jd.Name); err != nil {
		return nil, err
	}
	if jd.Port < 0 || jd.Port > 65535 {
		return nil, fmt.Errorf("port %d: want 1 to 65535", jd.Port)
	}
	fields, err := metaFields(&jd.WarcproxMeta)
	if err != nil {
		return nil, err
	}
	j := &Job{Name: jd.Name, Port: jd.Port, password: jd.Password, fields: fields, locked: map[string]bool{}}
	for _, k := range jd.Locked {
		if !slices.Contains(lockable, k) {
			return nil, fmt.Errorf("locked: %q is not a Warcprox-Meta field (these are: %s)", k, strings.Join(lockable, ", "))
		}
		j.locked[k] = true
	}
	if j.meta, err = j.parse(fields); err != nil {
		return nil, fmt.Errorf("warcprox-meta: %w", err)
	}
	if p := j.meta.WarcPrefix; p != nil && !j.meta.DoNotArchive() && checkPrefix != nil {
		if err := checkPrefix(*p); err != nil {
			return nil, fmt.Errorf("warcprox-meta: warc-prefix: %w", err)
		}
	}
	return j, nil
}

// checkName: a job's name is the user name of Basic credentials, which
// cannot hold a colon, and shows in logs and metric labels.
func checkName(name string) error {
	if name == "" {
		return errors.New("no name: each job needs one (the proxy user name that selects it)")
	}
	for _, r := range name {
		if r == ':' || r < 0x20 || r == 0x7f {
			return fmt.Errorf("name %q: no colon or control characters (it is the user name of Basic credentials)", name)
		}
	}
	return nil
}

// metaFields turns the YAML warcprox-meta mapping into the JSON of each
// top-level key, as a crawler's header would hold them.
func metaFields(n *yaml.Node) (map[string]json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if n.IsZero() {
		return fields, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("warcprox-meta (line %d): want a mapping, as the Warcprox-Meta header's JSON object", n.Line)
	}
	var v map[string]any
	if err := n.Decode(&v); err != nil {
		return nil, fmt.Errorf("warcprox-meta: %w", err)
	}
	for k, val := range v {
		raw, err := json.Marshal(val)
		if err != nil {
			return nil, fmt.Errorf("warcprox-meta: %q cannot be JSON: %w", k, err)
		}
		fields[k] = raw
	}
	return fields, nil
}
