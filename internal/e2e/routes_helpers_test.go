package e2e

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Loopback addresses the routes bind their outgoing connections to, so
// that the origin tells by r.RemoteAddr which way a request came.
const (
	socksBind  = "127.0.0.2" // microsocks -b
	parentBind = "127.0.0.3" // tinyproxy Bind
	torBind    = "127.0.0.4" // the test's own SOCKS server
)

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// startProcess runs bin until the test ends and waits until addr accepts
// connections.
func startProcess(t *testing.T, addr, bin string, args ...string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s: %v\n%s", bin, addr, err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startMicrosocks runs Debian's microsocks on a free loopback port, its
// outgoing connections bound to socksBind, with username/password
// authentication when user is not empty.
func startMicrosocks(t *testing.T, user, password string) string {
	t.Helper()
	bin := needTool(t, "microsocks", "microsocks")
	addr := freeAddr(t)
	host, port, _ := net.SplitHostPort(addr)
	args := []string{"-i", host, "-p", port, "-b", socksBind}
	if user != "" {
		args = append(args, "-u", user, "-P", password)
	}
	startProcess(t, addr, bin, args...)
	return addr
}

// startTinyproxy runs Debian's tinyproxy in the foreground as a parent
// proxy on a free loopback port, its outgoing connections bound to
// parentBind, asking for Basic credentials when user is not empty. With no
// ConnectPort line it allows CONNECT to any port.
func startTinyproxy(t *testing.T, user, password string) string {
	t.Helper()
	return startTinyproxyWith(t, user, password, "")
}

// startTinyproxyWith is startTinyproxy with more configuration lines.
func startTinyproxyWith(t *testing.T, user, password, extra string) string {
	t.Helper()
	bin := needTool(t, "tinyproxy", "tinyproxy")
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	conf := fmt.Sprintf("Port %s\nListen 127.0.0.1\nBind %s\nAllow 127.0.0.1\nTimeout 30\nMaxClients 50\n", port, parentBind)
	if user != "" {
		conf += fmt.Sprintf("BasicAuth %s %s\n", user, password)
	}
	conf += extra
	file := filepath.Join(t.TempDir(), "tinyproxy.conf")
	require.NoError(t, os.WriteFile(file, []byte(conf), 0o600))
	startProcess(t, addr, bin, "-d", "-c", file)
	return addr
}

// routeOrigin is an origin that notes the address each path came from.
type routeOrigin struct {
	plain, secure *httptest.Server
	mu            sync.Mutex
	from          map[string]string // path → remote IP
}

func newRouteOrigin(t *testing.T) *routeOrigin {
	o := &routeOrigin{from: map[string]string{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		o.mu.Lock()
		o.from[r.URL.Path] = host
		o.mu.Unlock()
		fmt.Fprint(w, "hello from "+r.URL.Path)
	})
	o.plain, o.secure = httptest.NewServer(h), httptest.NewTLSServer(h)
	t.Cleanup(o.plain.Close)
	t.Cleanup(o.secure.Close)
	return o
}

func (o *routeOrigin) cameFrom(path string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.from[path]
}

// nameSOCKS is a SOCKS5 server (no authentication) that resolves nothing:
// it notes the host each CONNECT names and connects every name to one
// origin, from torBind; IP literals are connected as given.
type nameSOCKS struct {
	ln     net.Listener
	origin string // host:port names are mapped to (its port is kept)
	mu     sync.Mutex
	names  []string
}

func startNameSOCKS(t *testing.T, originHost string) *nameSOCKS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &nameSOCKS{ln: ln, origin: originHost}
	var wg sync.WaitGroup
	serveConns(t, ln, &wg, s.serve)
	return s
}

func (s *nameSOCKS) addr() string { return s.ln.Addr().String() }

func (s *nameSOCKS) requested() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.names...)
}

func (s *nameSOCKS) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	host, port, err := socksRequest(br, c)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.names = append(s.names, host)
	s.mu.Unlock()
	target := net.JoinHostPort(host, port)
	if net.ParseIP(host) == nil {
		target = net.JoinHostPort(s.origin, port)
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(torBind)}, Timeout: 5 * time.Second}
	up, err := d.Dial("tcp", target)
	if err != nil {
		_, _ = c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0}) // connection refused
		return
	}
	defer up.Close()
	if _, err := c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0}); err != nil {
		return
	}
	go func() { _, _ = io.Copy(up, br); _ = up.(*net.TCPConn).CloseWrite() }()
	_, _ = io.Copy(c, up)
}

// socksRequest reads a SOCKS5 greeting (answering "no authentication")
// and a CONNECT request, and returns the host and port it names.
func socksRequest(br *bufio.Reader, w io.Writer) (host, port string, err error) {
	var hdr [2]byte
	if _, err = io.ReadFull(br, hdr[:]); err != nil || hdr[0] != 5 {
		return "", "", fmt.Errorf("not SOCKS5: %v", err)
	}
	if _, err = br.Discard(int(hdr[1])); err != nil {
		return "", "", err
	}
	if _, err = w.Write([]byte{5, 0}); err != nil {
		return "", "", err
	}
	var req [4]byte
	if _, err = io.ReadFull(br, req[:]); err != nil || req[1] != 1 {
		return "", "", fmt.Errorf("not CONNECT: %v", err)
	}
	var raw []byte
	switch req[3] {
	case 1:
		raw = make([]byte, 4)
	case 4:
		raw = make([]byte, 16)
	case 3:
		n, err := br.ReadByte()
		if err != nil {
			return "", "", err
		}
		raw = make([]byte, n)
	}
	if _, err = io.ReadFull(br, raw); err != nil {
		return "", "", err
	}
	host = string(raw)
	if req[3] != 3 {
		host = net.IP(raw).String()
	}
	var p [2]byte
	if _, err = io.ReadFull(br, p[:]); err != nil {
		return "", "", err
	}
	return host, strconv.Itoa(int(binary.BigEndian.Uint16(p[:]))), nil
}

// replySOCKS is a SOCKS5 server (no authentication) that answers every
// CONNECT with the reply code given and dials nothing; with reply 0 it
// never answers the CONNECT at all.
func replySOCKS(t *testing.T, reply byte) string {
	t.Helper()
	return serveLoopback(t, func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		if _, _, err := socksRequest(br, c); err != nil {
			return
		}
		if reply == 0 {
			_, _ = io.Copy(io.Discard, br) // until the client hangs up
			return
		}
		_, _ = c.Write([]byte{5, reply, 0, 1, 0, 0, 0, 0, 0, 0})
	})
}

// rawConnect sends a CONNECT for target to the proxy and returns its
// answer's status code and body.
func rawConnect(t *testing.T, proxyAddr, target string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
