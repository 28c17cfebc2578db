package e2e

// Interim (1xx) responses: an origin that sends them without end gets a
// 502 after a bounded number, with or without Expect: 100-continue.

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
)

// TestEndlessInterimResponses: an origin that sends 1xx responses forever
// gets a 502 after a bounded number, without filling the spool.
func TestEndlessInterimResponses(t *testing.T) {
	origin := newScriptOrigin(t, func(o *scriptOrigin, _ int64, c net.Conn, br *bufio.Reader) {
		if _, _, err := readHead(br); err != nil {
			return
		}
		hint := strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n", 1000)
		deadline := time.Now().Add(6 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-o.stop:
				return
			default:
			}
			if _, err := io.WriteString(c, hint); err != nil {
				return
			}
			time.Sleep(10 * time.Millisecond) // ~6 MB/s, to keep the test's disk use small
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	p := proxytest.Start(t, nil)
	resp, _, err := rawGet(t, p, "GET", "http://"+origin.addr()+"/hints", 4*time.Second)
	st, _ := http.Get(p.URL.String() + "/status")
	var disk string
	if st != nil {
		b, _ := io.ReadAll(st.Body)
		st.Body.Close()
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "spool_disk_bytes") {
				disk = strings.TrimSpace(l)
			}
		}
	}
	t.Logf("while the exchange waits: %s", disk)
	require.NoError(t, err, "no answer within 4 s: the proxy is still reading 1xx responses (%s)", disk)
	require.Equal(t, 502, resp.StatusCode)
}

// TestEndlessInterimResponsesExpectContinue: the same with Expect:
// 100-continue, which once recursed until the stack overflowed (run in a
// child process, since such a crash takes the test binary down).
func TestEndlessInterimResponsesExpectContinue(t *testing.T) {
	if os.Getenv("INTERIM_STACK_CHILD") == "1" {
		origin := newScriptOrigin(t, func(o *scriptOrigin, _ int64, c net.Conn, br *bufio.Reader) {
			if _, _, err := readHead(br); err != nil {
				return
			}
			proc := strings.Repeat("HTTP/1.1 102 Processing\r\n\r\n", 4096)
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				if _, err := io.WriteString(c, proc); err != nil {
					return
				}
			}
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		})
		p := proxytest.Start(t, nil)
		client := p.Client()
		client.Transport.(*http.Transport).ExpectContinueTimeout = 30 * time.Second
		req, _ := http.NewRequest("POST", "http://"+origin.addr()+"/upload", strings.NewReader("body"))
		req.Header.Set("Expect", "100-continue")
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestEndlessInterimResponsesExpectContinue$", "-test.v")
	cmd.Env = append(os.Environ(), "INTERIM_STACK_CHILD=1")
	out, err := cmd.CombinedOutput()
	s := string(out)
	if i := strings.Index(s, "goroutine stack exceeds"); i >= 0 {
		t.Fatalf("the proxy process crashed (recursion in awaitContinue: %v):\n%s",
			strings.Contains(s, "wire.(*Client).awaitContinue"), s[i:min(len(s), i+400)])
	}
	require.NoError(t, err, "child: %s", lastLines(s, 20))
}
