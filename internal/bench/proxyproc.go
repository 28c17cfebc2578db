package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"time"
)

var (
	listenRE  = regexp.MustCompile(`msg="warcproxy listening".* port=(\d+)`)
	metricsRE = regexp.MustCompile(`msg="serving /metrics and /status" address=(\S+)`)
)

// proxyProc is a running warcproxy.
type proxyProc struct {
	cmd      *exec.Cmd
	port     string
	metrics  string
	stderr   *tailBuffer
	exited   chan struct{}
	waitErr  error
	peakRSS  int64 // bytes, from VmHWM samples
	cpuTicks int64 // utime+stime from the last sample
	mu       sync.Mutex
}

// startProxy starts the binary and waits for its listening line.
func startProxy(ctx context.Context, bin string, args []string, env ...string) (*proxyProc, error) {
	cmd := exec.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	cmd.Stdout = io.Discard
	p := &proxyProc{cmd: cmd, stderr: &tailBuffer{max: 8 << 10}, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var once sync.Once
		for sc.Scan() {
			line := sc.Text()
			p.stderr.add(line)
			p.mu.Lock()
			if m := listenRE.FindStringSubmatch(line); m != nil {
				p.port = m[1]
			}
			if m := metricsRE.FindStringSubmatch(line); m != nil {
				p.metrics = m[1]
			}
			// The metrics line follows the listening line.
			if p.port != "" && p.metrics != "" {
				once.Do(func() { close(ready) })
			}
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		_ = pw.Close()
		close(p.exited)
	}()
	go p.sample()
	select {
	case <-ready:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("warcproxy exited at start: %v\n%s", p.waitErr, p.stderr.String())
	case <-time.After(20 * time.Second):
	case <-ctx.Done():
	}
	_ = cmd.Process.Kill()
	<-p.exited
	return nil, fmt.Errorf("warcproxy did not start: %w\n%s", cmp(ctx.Err(), errors.New("no listening line in 20s")), p.stderr.String())
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// sample reads the process's peak RSS and CPU time every 100 ms while it
// lives.
func (p *proxyProc) sample() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	pid := p.cmd.Process.Pid
	for {
		if rss, ok := readVmHWM(pid); ok {
			p.mu.Lock()
			p.peakRSS = max(p.peakRSS, rss)
			p.mu.Unlock()
		}
		if ticks, ok := readCPUTicks(pid); ok {
			p.mu.Lock()
			p.cpuTicks = max(p.cpuTicks, ticks)
			p.mu.Unlock()
		}
		select {
		case <-p.exited:
			return
		case <-t.C:
		}
	}
}

// stop sends SIGTERM and waits for the exit; it returns the drain time and
// the exit error (nil for status 0).
func (p *proxyProc) stop(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, fmt.Errorf("sending SIGTERM: %w", err)
	}
	select {
	case <-p.exited:
		return time.Since(start), p.waitErr
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return time.Since(start), fmt.Errorf("no exit within %s of SIGTERM (killed)", timeout)
	}
}

// tailBuffer keeps the last max bytes of lines written to it.
type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (t *tailBuffer) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, line...)
	t.b = append(t.b, '\n')
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
