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
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Version is the VersityGW release the tests run.
const Version = "v1.8.0"

// InstallHint says how to get the server, as make test and .ci/run do.
const InstallHint = "make versitygw (GOBIN=$HOME/.cache/warcproxy-tools/versitygw-" + Version +
	" go install github.com/versity/versitygw/cmd/versitygw@" + Version + ", a few minutes)"

// EnvBinary names the variable that points the tests at a versitygw; the
// Makefile builds into the path it names, or into cachedBinary.
const EnvBinary = "WARCPROXY_TEST_VERSITYGW"

// cachedBinary is where make versitygw puts the build when EnvBinary is
// not set.
func cachedBinary(home string) string {
	return filepath.Join(home, ".cache", "warcproxy-tools", "versitygw-"+Version, "versitygw")
}

// Binary finds versitygw: $WARCPROXY_TEST_VERSITYGW, the build make
// versitygw caches, or PATH. A variable naming no file is an error, so
// that a build that failed is skipped with the hint, not run.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", EnvBinary, err)
		}
		return p, nil
	}
	if home, err := os.UserHomeDir(); err == nil {
		if p := cachedBinary(home); fileExists(p) {
			return p, nil
		}
	}
	return exec.LookPath("versitygw")
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Server is a running VersityGW.
type Server struct {
	Endpoint       string // http://127.0.0.1:PORT
	Access, Secret string
	Root           string // the POSIX backend's folder: Root/BUCKET/KEY
	addr, bin      string
	cmd            *exec.Cmd
	log            *bytes.Buffer
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

// Start runs a server on a free loopback port with an empty root, stopped
// when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		skipOrFail(t, "versitygw not found (%v): %s", err, InstallHint)
	}
	s := &Server{Access: "warcproxytest", Secret: "warcproxytestsecret", Root: t.TempDir(), bin: bin}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	_ = ln.Close()
	s.Endpoint = "http://" + s.addr
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return s
}

func (s *Server) start() error {
	s.log = &bytes.Buffer{}
	s.cmd = exec.Command(s.bin, "--port", s.addr, "--access", s.Access, "--secret", s.Secret, "--quiet",
		"posix", s.Root)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("starting versitygw: %w", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", s.addr); err == nil {
			_ = c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Kill()
	return fmt.Errorf("versitygw did not listen on %s within 15s: %s", s.addr, s.log)
}

// Bucket makes a bucket (a folder of the root, as the POSIX backend has
// them) and returns its name.
func (s *Server) Bucket(t testing.TB, name string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(s.Root, name), 0o755); err != nil {
		t.Fatal(err)
	}
	return name
}

// Env is the AWS environment a client of this server needs.
func (s *Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s.Access, "AWS_SECRET_ACCESS_KEY=" + s.Secret, "AWS_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}
}

// SetEnv sets Env in this process for t (not with t.Parallel).
func (s *Server) SetEnv(t testing.TB) {
	t.Helper()
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Freeze stops the server (SIGSTOP): connections stay open, nothing answers.
func (s *Server) Freeze() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Thaw resumes a frozen server.
func (s *Server) Thaw() error { return s.cmd.Process.Signal(syscall.SIGCONT) }

// Kill ends the server at once.
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the server again on the same port and root.
func (s *Server) Restart() error {
	s.Kill()
	var err error
	for range 50 { // the port may linger a moment
		if err = s.start(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
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

// Log is what the server printed.
func (s *Server) Log() string { return s.log.String() }
