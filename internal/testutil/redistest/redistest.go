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

// start runs a private redis-server on a free loopback port.
func start(tb testing.TB, bin string) string {
	tb.Helper()
	for range 5 {
		port := freePort(tb)
		dir := tb.TempDir()
		cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
			"--save", "", "--appendonly", "no", "--dir", dir, "--protected-mode", "yes")
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
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		select {
		case ok := <-ready:
			if ok {
				tb.Cleanup(func() {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				})
				return addr
			}
			_ = cmd.Wait()
			// Lost the port to someone else? Try another one.
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			tb.Fatalf("redis-server did not start in 10 s:\n%s", log.String())
		}
	}
	tb.Fatal("redis-server did not start on any of 5 ports")
	return ""
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
