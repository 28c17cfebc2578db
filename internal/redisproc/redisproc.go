// Package redisproc runs a private redis-server on a loopback port, without
// persistence, for the tests and for warcbench soak and dedup: start it,
// freeze it, kill it, start it again empty on the same address.
package redisproc

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// readyTimeout bounds the wait for "Ready to accept connections".
const readyTimeout = 10 * time.Second

// Server is one redis-server process (and the ones that replace it on the
// same address after Restart).
type Server struct {
	Addr   string // 127.0.0.1:port
	bin    string
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start runs bin (redis-server) on a free loopback port, its working files
// in dir, trying a few ports in case another process takes one first.
func Start(bin, dir string) (*Server, error) {
	var lastErr error
	for range 5 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		s := &Server{Addr: ln.Addr().String(), bin: bin, dir: dir}
		_ = ln.Close()
		if lastErr = s.run(); lastErr == nil {
			return s, nil
		}
	}
	return nil, lastErr
}

// URL is the redis:// spec of database 0.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Freeze stops the server with SIGSTOP: connections stay open and hang, as
// with a server that is overloaded or paused, rather than refused.
func (s *Server) Freeze() error { return s.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen server.
func (s *Server) Thaw() error { return s.signal(syscall.SIGCONT) }

// Kill ends the server at once (its data is gone) and waits for it.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a frozen process dies too, but reaps late
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart kills the server and starts a new, empty one on the same address.
func (s *Server) Restart() error {
	s.Kill()
	deadline := time.Now().Add(readyTimeout)
	for {
		err := s.run()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("restarting redis-server on %s: %w", s.Addr, err)
		}
		time.Sleep(100 * time.Millisecond) // the port may not be free again yet
	}
}

func (s *Server) signal(sig os.Signal) error {
	if s.cmd == nil {
		return errors.New("redisproc: the server is not running")
	}
	return s.cmd.Process.Signal(sig)
}

// run starts redis-server on s.Addr and waits until it is ready.
func (s *Server) run() error {
	host, port, _ := net.SplitHostPort(s.Addr)
	cmd := exec.Command(s.bin, "--bind", host, "--port", port, "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--protected-mode", "yes")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting redis-server: %w", err)
	}
	ready, scanned := make(chan bool, 1), make(chan struct{})
	var log strings.Builder
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(out)
		ready <- waitReady(sc, &log)
		for sc.Scan() { // keep reading, so the server never blocks on its log
		}
	}()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	select {
	case ok := <-ready:
		if ok {
			s.cmd, s.exited = cmd, exited
			return nil
		}
	case <-time.After(readyTimeout):
		_ = cmd.Process.Kill()
	}
	<-exited
	<-scanned
	return fmt.Errorf("redis-server did not start on %s:\n%s", s.Addr, log.String())
}

// waitReady reads the server's log until it says it is ready (true) or
// ends (false), keeping the first 4 KiB for an error message.
func waitReady(sc *bufio.Scanner, log *strings.Builder) bool {
	for sc.Scan() {
		if log.Len() < 4096 {
			log.WriteString(sc.Text() + "\n")
		}
		if strings.Contains(sc.Text(), "Ready to accept connections") {
			return true
		}
	}
	return false
}
