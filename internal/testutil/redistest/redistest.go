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
	"strings"
	"testing"
	"time"

	"github.com/warcproxy/warcproxy/internal/redisproc"
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
	*redisproc.Server
	tb testing.TB
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
	srv, err := redisproc.Start(bin, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Kill)
	return &Server{Server: srv, tb: tb}
}

// Freeze stops the server with SIGSTOP (see redisproc.Server.Freeze).
func (s *Server) Freeze() { s.must(s.Server.Freeze()) }

// Thaw resumes a frozen server.
func (s *Server) Thaw() { s.must(s.Server.Thaw()) }

// Restart starts a new, empty server on the same address.
func (s *Server) Restart() { s.must(s.Server.Restart()) }

func (s *Server) must(err error) {
	s.tb.Helper()
	if err != nil {
		s.tb.Fatalf("redistest: %v", err)
	}
}

// start runs a private redis-server for the test's duration.
func start(tb testing.TB, bin string) string {
	tb.Helper()
	srv, err := redisproc.Start(bin, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Kill)
	return srv.Addr
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
