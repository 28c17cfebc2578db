// Package s3proc runs a private S3-compatible server, VersityGW with its
// POSIX backend (each folder of its root is a bucket, each object a
// file), on a loopback port, for the tests and for warcbench soak: start
// it, freeze it, kill it, start it again on the same port and root.
package s3proc

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Version is the VersityGW release the tests and the soak run.
const Version = "v1.8.0"

// InstallHint says how to get the server, as make test and .ci/run do.
const InstallHint = "make versitygw (GOBIN=$HOME/.cache/warcproxy-tools/versitygw-" + Version +
	" go install github.com/versity/versitygw/cmd/versitygw@" + Version + ", a few minutes)"

// EnvVar names the versitygw binary to use instead of looking for one.
const EnvVar = "WARCPROXY_TEST_VERSITYGW"

// Binary finds versitygw: $WARCPROXY_TEST_VERSITYGW (which must name a
// file), the build make versitygw caches, or PATH.
func Binary() (string, error) {
	if p := os.Getenv(EnvVar); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", EnvVar, err)
		}
		return p, nil
	}
	if home, err := os.UserHomeDir(); err == nil {
		if p := CachedBinary(home); fileExists(p) {
			return p, nil
		}
	}
	return exec.LookPath("versitygw")
}

// CachedBinary is where make versitygw puts the build when EnvVar is not
// set.
func CachedBinary(home string) string {
	return filepath.Join(home, ".cache", "warcproxy-tools", "versitygw-"+Version, "versitygw")
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Server is one versitygw process (and those that replace it on the same
// port and root after Restart).
type Server struct {
	Endpoint       string // http://127.0.0.1:PORT
	Access, Secret string
	Root           string // Root/BUCKET/KEY
	addr, bin      string
	tlsArgs        []string // --cert, --key: HTTPS
	mu             sync.Mutex
	cmd            *exec.Cmd
	log            *bytes.Buffer
}

// Start runs bin on a free loopback port with its buckets under root.
func Start(bin, root string) (*Server, error) { return start(bin, root, "", "") }

// StartTLS is Start serving HTTPS with the certificate and key in
// certFile and keyFile (PEM).
func StartTLS(bin, root, certFile, keyFile string) (*Server, error) {
	return start(bin, root, certFile, keyFile)
}

func start(bin, root, certFile, keyFile string) (*Server, error) {
	var lastErr error
	for range 5 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		s := &Server{Access: "warcproxytest", Secret: "warcproxytestsecret", Root: root, bin: bin, addr: ln.Addr().String()}
		_ = ln.Close()
		s.Endpoint = "http://" + s.addr
		if certFile != "" {
			s.tlsArgs = []string{"--cert", certFile, "--key", keyFile}
			s.Endpoint = "https://" + s.addr
		}
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	return nil, lastErr
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = &bytes.Buffer{}
	args := append([]string{"--port", s.addr, "--access", s.Access, "--secret", s.Secret, "--quiet"}, s.tlsArgs...)
	s.cmd = exec.Command(s.bin, append(args, "posix", s.Root)...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("starting versitygw: %w", err)
	}
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", s.addr); err == nil {
			_ = c.Close()
			return nil
		}
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	return fmt.Errorf("versitygw did not listen on %s within 15s: %s", s.addr, s.log)
}

// Bucket makes a bucket (a folder of the root).
func (s *Server) Bucket(name string) error { return os.MkdirAll(filepath.Join(s.Root, name), 0o755) }

// Env is the AWS environment a client of this server needs.
func (s *Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s.Access, "AWS_SECRET_ACCESS_KEY=" + s.Secret, "AWS_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}
}

// Freeze stops the server (SIGSTOP): connections stay open, nothing answers.
func (s *Server) Freeze() error { return s.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen server.
func (s *Server) Thaw() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return fmt.Errorf("versitygw is not running")
	}
	return s.cmd.Process.Signal(sig)
}

// Kill ends the server at once; its buckets stay on disk.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
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

// Log is what the server printed since it last started.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}
