package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRouteFlags(t *testing.T) {
	c, err := Parse([]string{"--socks-proxy", "127.0.0.1:1080", "--socks-proxy-username", "u",
		"--socks-proxy-password", "pw", "--onion-tor-socks-proxy", "127.0.0.1:9050"}, nil)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:1080", c.SOCKSProxy)
	require.Equal(t, "u", c.SOCKSProxyUsername)
	require.Equal(t, "pw", c.SOCKSProxyPassword)
	require.Equal(t, "127.0.0.1:9050", c.OnionTorSOCKSProxy)

	c, err = Parse([]string{"--upstream-proxy", "http://alice:s%40cret@127.0.0.1:3128"}, nil)
	require.NoError(t, err)
	p, err := c.Parent()
	require.NoError(t, err)
	require.Equal(t, ParentProxy{Addr: "127.0.0.1:3128", User: "alice", Password: "s@cret"}, p)
}

func TestRouteFlagsFromFile(t *testing.T) {
	c, err := parseFile(t, "socks-proxy: 127.0.0.1:1080\nsocks-proxy-username: u\nsocks-proxy-password: pw\nonion-tor-socks-proxy: 127.0.0.1:9050\n")
	require.NoError(t, err)
	require.Equal(t, "pw", c.SOCKSProxyPassword)
	require.Equal(t, "127.0.0.1:9050", c.OnionTorSOCKSProxy)
	c, err = parseFile(t, "upstream-proxy: http://127.0.0.1:3128\n")
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:3128", c.UpstreamProxy)
}

// TestRouteErrors: each names its flag, and none repeats a password.
func TestRouteErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string // in the error
		notWant []string // not in it (never the password)
	}{
		{"both routes", []string{"--socks-proxy", "127.0.0.1:1080", "--upstream-proxy", "http://127.0.0.1:3128"},
			[]string{"--socks-proxy", "--upstream-proxy"}, nil},
		{"https parent", []string{"--upstream-proxy", "https://u:s3cret-pw@127.0.0.1:3128"}, []string{"--upstream-proxy", "only http://"}, nil},
		{"socks scheme", []string{"--upstream-proxy", "socks5://127.0.0.1:1080"}, []string{"--upstream-proxy", "only http://"}, nil},
		{"no port", []string{"--upstream-proxy", "http://u:s3cret-pw@127.0.0.1"},
			[]string{"--upstream-proxy: no port (a parent proxy has no default one) (want http://[user:password@]host:port)"}, nil},
		{"no port, a slash", []string{"--upstream-proxy", "http://u:s3cret-pw@proxy.example/"}, []string{"--upstream-proxy: no port"}, nil},
		{"a path", []string{"--upstream-proxy", "http://u:s3cret-pw@127.0.0.1:8888/path"},
			[]string{"--upstream-proxy: a path is not allowed (want http://[user:password@]host:port)"}, []string{"/path"}},
		{"a query", []string{"--upstream-proxy", "http://127.0.0.1:8888/?s3cret-pw"}, []string{"--upstream-proxy: a query is not allowed"}, nil},
		{"no host", []string{"--upstream-proxy", "http://u:s3cret-pw@:3128"}, []string{"--upstream-proxy: no host"}, nil},
		{"bad port", []string{"--upstream-proxy", "http://u:s3cret-pw@proxy.example:99999"},
			[]string{"--upstream-proxy: the port must be a number from 1 to 65535"}, nil},
		{"unparsable", []string{"--upstream-proxy", "http://u:s3cret-pw@[::1"}, []string{"--upstream-proxy: not a URL"}, nil},
		{"socks without port", []string{"--socks-proxy", "127.0.0.1"}, []string{"--socks-proxy", "host:port"}, nil},
		{"tor without port", []string{"--onion-tor-socks-proxy", "localhost"}, []string{"--onion-tor-socks-proxy"}, nil},
		{"socks URL with credentials", []string{"--socks-proxy", "socks5://crawler:s3cret-pw@127.0.0.1:1080"},
			[]string{"--socks-proxy: want host:port, e.g. 127.0.0.1:1080; no scheme or credentials here: " +
				"give them with --socks-proxy-username and --socks-proxy-password"}, []string{"crawler"}},
		{"socks credentials, no scheme", []string{"--socks-proxy", "crawler:s3cret-pw@127.0.0.1:1080"},
			[]string{"--socks-proxy: want host:port", "--socks-proxy-password"}, []string{"crawler"}},
		{"tor URL with credentials", []string{"--onion-tor-socks-proxy", "socks5h://crawler:s3cret-pw@127.0.0.1:9050"},
			[]string{"--onion-tor-socks-proxy: want host:port, e.g. 127.0.0.1:9050; no scheme or credentials here"},
			[]string{"crawler", "--socks-proxy-username"}},
		{"password without socks", []string{"--socks-proxy-password", "s3cret-pw"},
			[]string{"--socks-proxy-password: needs --socks-proxy"}, []string{"username"}},
		{"username without socks", []string{"--socks-proxy-username", "alice"},
			[]string{"--socks-proxy-username: needs --socks-proxy"}, []string{"password"}},
		{"credentials without socks", []string{"--socks-proxy-username", "alice", "--socks-proxy-password", "s3cret-pw"},
			[]string{"--socks-proxy-username and --socks-proxy-password need --socks-proxy"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.args, nil)
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
			for _, w := range append(tc.notWant, "s3cret-pw") {
				require.NotContains(t, err.Error(), w)
			}
		})
	}
}

// TestSOCKSCredentialLimits: RFC 1929 carries the username and the
// password in at most 255 bytes each; longer ones are refused at start,
// from the flags and from the config file alike, naming the key and the
// limit and never repeating the secret.
func TestSOCKSCredentialLimits(t *testing.T) {
	long := "s3cret-pw" + strings.Repeat("x", 256-len("s3cret-pw"))
	most := "s3cret-pw" + strings.Repeat("x", 255-len("s3cret-pw"))
	for _, tc := range []struct {
		name     string
		user, pw string
		want     []string // nil: accepted
	}{
		{"at the limit", most, most, nil},
		{"long password", "crawler", long, []string{"--socks-proxy-password", "256 bytes", "255"}},
		{"long username", long, "pw", []string{"--socks-proxy-username", "256 bytes", "255"}},
		{"password without username", "", "s3cret-pw", []string{"--socks-proxy-password", "--socks-proxy-username"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--socks-proxy", "127.0.0.1:1080", "--socks-proxy-password", tc.pw}
			if tc.user != "" {
				args = append(args, "--socks-proxy-username", tc.user)
			}
			_, fromFlags := Parse(args, nil)
			yaml := "socks-proxy: 127.0.0.1:1080\nsocks-proxy-username: '" + tc.user + "'\nsocks-proxy-password: " + tc.pw + "\n"
			_, fromFile := parseFile(t, yaml)
			for _, err := range []error{fromFlags, fromFile} {
				if tc.want == nil {
					require.NoError(t, err)
					continue
				}
				require.Error(t, err)
				for _, w := range tc.want {
					require.Contains(t, err.Error(), w)
				}
				require.NotContains(t, err.Error(), "s3cret-pw")
			}
		})
	}
}
