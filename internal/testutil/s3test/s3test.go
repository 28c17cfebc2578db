// Package s3test runs a real S3-compatible server for tests, VersityGW
// with its POSIX backend (each folder of its root is a bucket), and reads
// back what was stored with an independent client, rclone. Without
// either the test is skipped with the command that installs it, except
// under CI=true, where that is a failure (.ci/run installs both).
package s3test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/warcproxy/warcproxy/internal/s3proc"
)

// Version, InstallHint, EnvBinary and Binary are s3proc's: the server
// the tests run is the one warcbench soak runs.
const (
	Version     = s3proc.Version
	InstallHint = s3proc.InstallHint
	EnvBinary   = s3proc.EnvVar
)

// Binary finds versitygw (see s3proc.Binary).
func Binary() (string, error) { return s3proc.Binary() }

func cachedBinary(home string) string { return s3proc.CachedBinary(home) }

// Server is a running VersityGW.
type Server struct {
	*s3proc.Server
}

func ci() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}

func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if ci() {
		t.Fatalf(format+" (CI=true: .ci/run installs it)", args...)
	}
	t.Skipf(format, args...)
}

// Bin returns the versitygw binary, or skips t (fails it under CI=true)
// with the hint that installs it.
func Bin(t testing.TB) string {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		skipOrFail(t, "versitygw not found (%v): %s", err, InstallHint)
	}
	return bin
}

// Start runs a server on a free loopback port with an empty root, stopped
// when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	srv, err := s3proc.Start(Bin(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Kill)
	return &Server{srv}
}

// Bucket makes a bucket (a folder of the root, as the POSIX backend has
// them) and returns its name.
func (s *Server) Bucket(t testing.TB, name string) string {
	t.Helper()
	if err := s.Server.Bucket(name); err != nil {
		t.Fatal(err)
	}
	return name
}

// SetEnv sets Env in this process for t (not with t.Parallel).
func (s *Server) SetEnv(t testing.TB) {
	t.Helper()
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Object is an object as rclone lists it.
type Object struct {
	Path string `json:"Path"`
	Size int64  `json:"Size"`
}

// rclone runs rclone against this server (an on-the-fly remote named
// "vgw" from environment variables) and returns its stdout.
func (s *Server) rclone(t testing.TB, args ...string) ([]byte, error) {
	t.Helper()
	bin, err := exec.LookPath("rclone")
	if err != nil {
		skipOrFail(t, "rclone not found (apt-get install rclone): the independent client that reads back what was shipped")
	}
	cmd := exec.Command(bin, args...)
	// rclone's own HTTP transport cannot take the SDK's AWS_CA_BUNDLE.
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "AWS_") }),
		"RCLONE_CONFIG=/dev/null",
		"RCLONE_CONFIG_VGW_TYPE=s3", "RCLONE_CONFIG_VGW_PROVIDER=Other",
		"RCLONE_CONFIG_VGW_ENDPOINT="+s.Endpoint, "RCLONE_CONFIG_VGW_ACCESS_KEY_ID="+s.Access,
		"RCLONE_CONFIG_VGW_SECRET_ACCESS_KEY="+s.Secret, "RCLONE_CONFIG_VGW_REGION=us-east-1",
		"RCLONE_CONFIG_VGW_FORCE_PATH_STYLE=true")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("rclone %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// List lists the objects under bucket/prefix, recursively, with rclone.
func (s *Server) List(t testing.TB, bucket, prefix string) []Object {
	t.Helper()
	out, err := s.rclone(t, "lsjson", "--recursive", "--files-only", "vgw:"+bucket+"/"+prefix)
	if err != nil {
		t.Fatal(err)
	}
	var objs []Object
	if err := json.Unmarshal(out, &objs); err != nil {
		t.Fatalf("rclone lsjson: %v: %s", err, out)
	}
	return objs
}

// Download copies bucket/prefix into a new folder with rclone and returns it.
func (s *Server) Download(t testing.TB, bucket, prefix string) string {
	t.Helper()
	dst := t.TempDir()
	if _, err := s.rclone(t, "copy", "vgw:"+bucket+"/"+prefix, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// Multipart lists the multipart uploads in progress in bucket, as rclone
// sees them; each is a key.
func (s *Server) Multipart(t testing.TB, bucket string) []string {
	t.Helper()
	out, err := s.rclone(t, "backend", "list-multipart-uploads", "vgw:"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	var byBucket map[string][]struct{ Key string }
	if err := json.Unmarshal(out, &byBucket); err != nil {
		t.Fatalf("rclone list-multipart-uploads: %v: %s", err, out)
	}
	var keys []string
	for _, ups := range byBucket {
		for _, u := range ups {
			keys = append(keys, u.Key)
		}
	}
	return keys
}
