// Package upload ships closed files (WARCs, their CDXJ indexes, crawl
// logs) to S3-compatible object storage: the stage after the writer. The
// backlog is the closed files on disk; a local file is deleted only once
// the store has confirmed the object's size and SHA-256, so a crash or a
// store outage loses nothing, and the next start ships what is left.
package upload

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Target is where files go: --upload-to s3://BUCKET/PREFIX.
type Target struct {
	Bucket string
	// Prefix is "" or ends in "/": keys are Prefix + the file's path
	// relative to --dir.
	Prefix string
}

// ParseTarget reads s3://BUCKET or s3://BUCKET/PREFIX. A prefix gets a
// trailing "/" when it has none, so that "crawl1" cannot also match
// "crawl10"'s keys when leftovers are listed.
func ParseTarget(s string) (Target, error) {
	u, err := url.Parse(s)
	if err != nil {
		return Target{}, fmt.Errorf("%q is not a URL: want s3://BUCKET/PREFIX", s)
	}
	if u.Scheme != "s3" {
		return Target{}, fmt.Errorf("%q: want s3://BUCKET/PREFIX (the endpoint of a store other than AWS goes in --upload-endpoint)", s)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Port() != "" {
		return Target{}, fmt.Errorf("%q: want s3://BUCKET/PREFIX, without credentials, port, query or fragment (credentials come from the AWS environment)", s)
	}
	if err := checkBucket(u.Host); err != nil {
		return Target{}, fmt.Errorf("%q: %w", s, err)
	}
	prefix := strings.TrimPrefix(u.Path, "/")
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if strings.Contains(prefix, "//") || strings.HasPrefix(prefix, "/") {
		return Target{}, fmt.Errorf("%q: the prefix has an empty path segment", s)
	}
	return Target{Bucket: u.Host, Prefix: prefix}, nil
}

// checkBucket applies S3's bucket naming rules that matter here: 3-63
// characters of lowercase letters, digits, dots and hyphens.
func checkBucket(b string) error {
	if b == "" {
		return errors.New("no bucket name")
	}
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket name %q must be 3 to 63 characters long", b)
	}
	for _, c := range b {
		if !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz0123456789.-", c) {
			return fmt.Errorf("bucket name %q may hold only lowercase letters, digits, dots and hyphens", b)
		}
	}
	return nil
}

// String is the target as --upload-to has it.
func (t Target) String() string { return "s3://" + t.Bucket + "/" + t.Prefix }

// Key is the object key of a file at rel, its path relative to --dir.
func (t Target) Key(rel string) string { return t.Prefix + filepath.ToSlash(rel) }

// URL is the s3:// URL of key, as events and logs name objects.
func (t Target) URL(key string) string { return "s3://" + t.Bucket + "/" + key }
