package bench

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// redisProc is a private redis-server on 127.0.0.1, without persistence.
type redisProc struct {
	bin, dir, addr string
	cmd            *exec.Cmd
	exited         chan struct{}
}

// startRedis starts bin on a free loopback port (trying a few).
func startRedis(bin, dir string) (*redisProc, error) {
	var lastErr error
	for range 5 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		r := &redisProc{bin: bin, dir: dir, addr: addr}
		if lastErr = r.run(); lastErr == nil {
			return r, nil
		}
	}
	return nil, lastErr
}

// run starts the server on r.addr and waits until it is ready.
func (r *redisProc) run() error {
	host, port, _ := net.SplitHostPort(r.addr)
	cmd := exec.Command(r.bin, "--bind", host, "--port", port, "--save", "", "--appendonly", "no",
		"--dir", r.dir, "--protected-mode", "yes")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting redis-server: %w", err)
	}
	ready := make(chan bool, 1)
	scanned := make(chan struct{})
	var log strings.Builder
	go func() {
		defer close(scanned)
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
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	select {
	case ok := <-ready:
		if ok {
			r.cmd, r.exited = cmd, exited
			return nil
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
	}
	<-exited
	<-scanned
	return fmt.Errorf("redis-server did not start on %s:\n%s", r.addr, log.String())
}

// URL is the redis:// spec of database 0.
func (r *redisProc) URL() string { return "redis://" + r.addr + "/0" }

// kill ends the server at once and waits for it.
func (r *redisProc) kill() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.exited
	r.cmd = nil
}

// restart kills the server and starts a new, empty one on the same port.
func (r *redisProc) restart() error {
	r.kill()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := r.run()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("restarting redis on port %s: %w", strconv.Quote(r.addr), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
