// Package redistest gives tests a real Redis server on 127.0.0.1.
//
// If WARCPROXY_TEST_REDIS names a server (host:port, as .ci/run sets it),
// tests use it, each with keys under its own random prefix so that tests and
// packages running in parallel never see each other's data. Otherwise a
// private redis-server is started for the test (from PATH) and stopped when
// it ends. Without either the test is skipped, except under CI=true, where
// a missing Redis fails the test instead of hiding it.
package redistest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// EnvVar names an existing server for tests to use.
const EnvVar = "WARCPROXY_TEST_REDIS"

// URL returns a redis:// spec with a key prefix unique to the test, for a
// server that lives at least as long as the test.
func URL(tb testing.TB) string {
	tb.Helper()
	addr := Addr(tb)
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("redis://%s/0?prefix=test-%s:", addr, hex.EncodeToString(b[:]))
}

// Addr returns host:port of a Redis server for the test.
func Addr(tb testing.TB) string {
	tb.Helper()
	if addr := os.Getenv(EnvVar); addr != "" {
		if err := ping(addr); err != nil {
			tb.Fatalf("%s=%s: %v", EnvVar, addr, err)
		}
		return addr
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("no Redis for this test: set %s or install redis-server (.ci/run does)", EnvVar)
		}
		tb.Skipf("no Redis: set %s or install redis-server", EnvVar)
	}
	return start(tb, bin)
}

// Server is a private redis-server a test can freeze, thaw, kill and
// restart, to see what the proxy does when its store fails.
type Server struct {
	tb   testing.TB
	bin  string
	Addr string // 127.0.0.1:port, the same across restarts
	cmd  *exec.Cmd
}

// Private starts a redis-server of the test's own (never the shared one of
// WARCPROXY_TEST_REDIS, which other tests use), stopped at cleanup.
func Private(tb testing.TB) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("no redis-server for this test (.ci/run installs it)")
		}
		tb.Skipf("no redis-server")
	}
	s := &Server{tb: tb, bin: bin}
	for range 5 {
		if s.run(net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(tb)))) {
			tb.Cleanup(s.Kill)
			return s
		}
	}
	tb.Fatal("redis-server did not start on any of 5 ports")
	return nil
}

// Freeze stops the server with SIGSTOP: connections stay open and hang,
// as with a server that is overloaded or paused, rather than refused.
func (s *Server) Freeze() { s.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen server.
func (s *Server) Thaw() { s.signal(syscall.SIGCONT) }

// Kill ends the server at once (its data is gone: no persistence).
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts a new, empty server on the same address.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for !s.run(s.Addr) {
		if time.Now().After(deadline) {
			s.tb.Fatalf("redis-server did not start again on %s", s.Addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *Server) signal(sig os.Signal) {
	s.tb.Helper()
	if s.cmd == nil {
		s.tb.Fatal("redistest: the server is not running")
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.tb.Fatalf("redistest: %v", err)
	}
}

// run starts redis-server on addr and reports whether it is ready.
func (s *Server) run(addr string) bool {
	s.tb.Helper()
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(s.bin, "--bind", host, "--port", port,
		"--save", "", "--appendonly", "no", "--dir", s.tb.TempDir(), "--protected-mode", "yes")
	if !startAndWait(s.tb, cmd) {
		return false
	}
	s.Addr, s.cmd = addr, cmd
	return true
}

// start runs a private redis-server on a free loopback port.
func start(tb testing.TB, bin string) string {
	tb.Helper()
	for range 5 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(tb)))
		host, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(bin, "--bind", host, "--port", port,
			"--save", "", "--appendonly", "no", "--dir", tb.TempDir(), "--protected-mode", "yes")
		if startAndWait(tb, cmd) {
			tb.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			})
			return addr
		}
		// Lost the port to someone else? Try another one.
	}
	tb.Fatal("redis-server did not start on any of 5 ports")
	return ""
}

// startAndWait starts cmd and waits for "Ready to accept connections";
// false (the process reaped) when it exits first.
func startAndWait(tb testing.TB, cmd *exec.Cmd) bool {
	tb.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		tb.Fatalf("starting redis-server: %v", err)
	}
	ready := make(chan bool, 1)
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			if log.Len() < 4096 {
				log.WriteString(sc.Text() + "\n")
			}
			if !sent && strings.Contains(sc.Text(), "Ready to accept connections") {
				ready <- true
				sent = true
			}
		}
		if !sent {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			_ = cmd.Wait()
		}
		return ok
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		tb.Fatalf("redis-server did not start in 10 s:\n%s", log.String())
		return false
	}
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ping checks that addr answers PING with PONG.
func ping(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}
