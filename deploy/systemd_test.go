package deploy_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warcproxy/warcproxy/deploy/deploytest"
)

// systemdUnit returns the unit's settings (continuations joined; a key
// given twice keeps every value).
func systemdUnit(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile("systemd/warcproxy.service")
	require.NoError(t, err)
	out := map[string][]string{}
	var cur strings.Builder
	for _, l := range strings.Split(string(data), "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "#") || strings.HasPrefix(t, "[") {
			continue
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(l, " \t"), "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(l)
		if k, v, ok := strings.Cut(strings.TrimSpace(cur.String()), "="); ok {
			out[k] = append(out[k], strings.TrimSpace(v))
		}
		cur.Reset()
	}
	return out
}

func systemdDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		n, err2 := strconv.Atoi(s) // plain seconds
		require.NoError(t, err2, "duration %q", s)
		d = time.Duration(n) * time.Second
	}
	return d
}

// TestSystemdUnit: ExecStart's flags parse; the stop timeout is longer than
// the drain; LimitNOFILE follows the 3-per-connection rule; the hardening
// the README promises is there, and the WARC directory is writable.
func TestSystemdUnit(t *testing.T) {
	u := systemdUnit(t)
	require.Len(t, u["ExecStart"], 1)
	argv := strings.Fields(strings.ReplaceAll(u["ExecStart"][0], "${CREDENTIALS_DIRECTORY}", "/run/credentials/warcproxy.service"))
	require.Equal(t, "/usr/local/bin/warcproxy", argv[0])
	cfg := deploytest.ParseFlags(t, "warcproxy.service ExecStart", argv[1:])
	if cfg.Address != "127.0.0.1" && cfg.Address != "localhost" {
		require.NotEmpty(t, cfg.ProxyAuthFile, "--address %s without proxy auth", cfg.Address)
	}
	stop := systemdDuration(t, u["TimeoutStopSec"][0])
	require.Greater(t, stop, cfg.ShutdownTimeout+10*time.Second, "TimeoutStopSec against --shutdown-timeout")
	nofile, err := strconv.Atoi(u["LimitNOFILE"][0])
	require.NoError(t, err)
	require.GreaterOrEqual(t, nofile, 3*cfg.MaxConns+1024, "LimitNOFILE against --max-conns %d", cfg.MaxConns)
	require.Contains(t, u["ReadWritePaths"], cfg.Dir)

	for k, want := range map[string]string{
		"KillSignal": "SIGTERM", "Restart": "on-failure", "NoNewPrivileges": "yes",
		"ProtectSystem": "strict", "PrivateTmp": "yes", "ProtectHome": "yes",
		"CapabilityBoundingSet": "", "SystemCallFilter": "@system-service",
		"ExecReload": "/bin/kill -HUP $MAINPID", // SIGHUP reloads --jobs
	} {
		require.Contains(t, u[k], want, "%s=%s", k, want)
	}
	require.Contains(t, u["RestrictAddressFamilies"][0], "AF_NETLINK", "the loop check lists the host's addresses")
	require.NotContains(t, u, "ProcSubset", "Go reads /proc/sys/net/core/somaxconn")
}

// TestSystemdSysctl: every key in 60-warcproxy.conf is in the README's
// table with the same value, and fs.file-max stays out: systemd and the
// kernel's RAM-based default usually put it higher than any fixed value,
// so setting it would lower it (seen under systemd 252: 2466170 on a 24 GB
// host against the 2097152 the file once set).
func TestSystemdSysctl(t *testing.T) {
	data, err := os.ReadFile("systemd/60-warcproxy.conf")
	require.NoError(t, err)
	conf := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";") {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		require.True(t, ok, "line %q", l)
		conf[strings.TrimSpace(k)] = strings.Join(strings.Fields(v), " ")
	}
	require.NotEmpty(t, conf)
	require.NotContains(t, conf, "fs.file-max", "a fixed fs.file-max lowers systemd's maximum")

	readme, err := os.ReadFile("systemd/README.md")
	require.NoError(t, err)
	table := map[string]string{}
	for _, l := range strings.Split(string(readme), "\n") {
		cells := strings.Split(l, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		table[strings.Trim(strings.TrimSpace(cells[1]), "`")] = strings.TrimSpace(cells[2])
	}
	require.Equal(t, conf, table, "60-warcproxy.conf against the README's table")
}
