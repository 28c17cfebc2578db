package jobs

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/warcproxy/warcproxy/warcproxmeta"
)

// Job is one crawl job of the table.
type Job struct {
	Name string
	// Port, if not 0, is the port whose every request is this job's.
	Port     int
	password string
	fields   map[string]json.RawMessage // the job's warcprox-meta, key by key
	meta     *warcproxmeta.Meta         // fields parsed: the Meta of a request without a header
	locked   map[string]bool
}

// HasPassword reports whether the job's credentials must carry one.
func (j *Job) HasPassword() bool { return j.password != "" }

// PasswordOK reports, in constant time, whether password is the job's
// (any password is, for a job without one).
func (j *Job) PasswordOK(password string) bool {
	if j.password == "" {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(password), []byte(j.password)) == 1
}

// lockable are the Warcprox-Meta fields a job can keep requests from
// replacing (warcprox's api.rst).
var lockable = []string{"warc-prefix", "dedup-buckets", "dedup-bucket", "captures-bucket", "stats",
	"limits", "soft-limits", "blocks", "compressed_blocks", "accept", "mime-type-filters", "metadata"}

// ErrLocked is wrapped by Meta's error when a request's header names a
// field the job locks.
var ErrLocked = errors.New("locked by the job")

// Meta is the Warcprox-Meta a request of the job goes by: the job's, with
// each top-level field the request's own header names replacing the job's
// (page scripts can set the header: a field in the job's "locked" list
// refuses the request instead). header is the request's header, "" when it
// has none. Errors are warcproxmeta's (a 400 naming the field), or wrap
// ErrLocked.
func (j *Job) Meta(p *warcproxmeta.Parser, header string) (*warcproxmeta.Meta, error) {
	if header == "" {
		return j.meta, nil
	}
	if _, err := p.Parse(header); err != nil {
		return nil, err
	}
	var own map[string]json.RawMessage
	if err := json.Unmarshal([]byte(header), &own); err != nil {
		return nil, err // Parse took it: cannot happen
	}
	merged := make(map[string]json.RawMessage, len(j.fields)+len(own))
	for k, v := range j.fields {
		merged[k] = v
	}
	for k, v := range own {
		if j.locked[k] {
			return nil, fmt.Errorf("%w: field %q of the Warcprox-Meta header is set by job %q and cannot be changed", ErrLocked, k, j.Name)
		}
		merged[k] = v
	}
	return j.parseWith(p, merged)
}

// parse is the job's own fields parsed, once, when the file is loaded.
func (j *Job) parse(fields map[string]json.RawMessage) (*warcproxmeta.Meta, error) {
	return j.parseWith(new(warcproxmeta.Parser), fields)
}

func (j *Job) parseWith(p *warcproxmeta.Parser, fields map[string]json.RawMessage) (*warcproxmeta.Meta, error) {
	doc, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	return p.Parse(string(doc))
}
