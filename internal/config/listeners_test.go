package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestListenersThatClash: two listeners on one socket are a configuration
// error naming both flags (not "address already in use" at start, as if
// another process held the port); the same port on different hosts is
// not, nor is port 0.
func TestListenersThatClash(t *testing.T) {
	for _, tc := range []struct {
		name    string
		address string
		port    int
		metrics string
		want    string // "" for no clash
	}{
		{"same host and port", "127.0.0.1", 8051, "127.0.0.1:8051",
			"--address 127.0.0.1 --port 8051 and --metrics-address 127.0.0.1:8051 would both listen on port 8051 of 127.0.0.1: give one of them another port"},
		{"same port, other host", "127.0.0.1", 8051, "127.0.0.2:8051", ""},
		{"other port", "127.0.0.1", 8051, "127.0.0.1:9100", ""},
		{"port 0 twice", "127.0.0.1", 0, "127.0.0.1:0", ""},
		{"proxy on 0.0.0.0", "0.0.0.0", 8051, "127.0.0.1:8051",
			"--address 0.0.0.0 --port 8051 and --metrics-address 127.0.0.1:8051 would both listen on port 8051 (0.0.0.0 is every address, 127.0.0.1 among them)"},
		{"metrics on an empty host", "127.0.0.1", 8051, ":8051",
			`--address 127.0.0.1 --port 8051 and --metrics-address :8051 would both listen on port 8051 ("" is every address, 127.0.0.1 among them)`},
		{"proxy on an empty host", "", 9100, "10.0.0.1:9100", `--address "" --port 9100 and --metrics-address 10.0.0.1:9100`},
		{"metrics on ::", "192.168.1.5", 8051, "[::]:8051", "(:: is every address, 192.168.1.5 among them)"},
		{"both wildcards", "::", 8051, "0.0.0.0:8051", "would both listen on port 8051 of every address"},
		// 0.0.0.0 is IPv4 only (internal/app listens with tcp4 there).
		{"0.0.0.0 and an IPv6 address", "0.0.0.0", 8051, "[::1]:8051", ""},
		{"0.0.0.0 and a name", "0.0.0.0", 8051, "localhost:8051", "--metrics-address localhost:8051"},
		{"the same IPv6 address spelled twice", "::1", 8051, "[0:0::1]:8051", "--address ::1 --port 8051 and --metrics-address [0:0::1]:8051"},
		{"the same name", "localhost", 8051, "LOCALHOST:8051", "--metrics-address LOCALHOST:8051"},
		// localhost is where Go listens for it, 127.0.0.1 (warcprox's
		// default --address is localhost); other names are not resolved.
		{"localhost and 127.0.0.1", "localhost", 8051, "127.0.0.1:8051",
			"--address localhost --port 8051 and --metrics-address 127.0.0.1:8051 would both listen on port 8051 of localhost"},
		{"localhost and ::1", "localhost", 8051, "[::1]:8051", ""},
		{"another name and an address", "proxy.example", 8051, "127.0.0.1:8051", ""},
		{"a service name", "127.0.0.1", 80, "127.0.0.1:http", "--metrics-address 127.0.0.1:http"},
		// A port that cannot be listened on is a bad flag, not a failed start.
		{"a port past 65535", "127.0.0.1", 8051, "127.0.0.1:99999", `--metrics-address: "127.0.0.1:99999": want host:port with a port from 0 to 65535`},
		{"a port that is no service", "127.0.0.1", 8051, "127.0.0.1:8051x", `--metrics-address: "127.0.0.1:8051x": want host:port`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := with(func(c *Config) { c.Address, c.Port, c.MetricsAddress = tc.address, tc.port, tc.metrics }).Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}
