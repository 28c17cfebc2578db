package store_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/internal/testutil/redistest"
)

// TestCheckRefused: the start check fails only a spec the server refuses
// for good (wrong password, no such database), not one of a user whose
// ACL grants the commands the stores use but not PING, as an operator
// may restrict a crawler's Redis user.
func TestCheckRefused(t *testing.T) {
	srv := redistest.Private(t)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer admin.Close()
	require.NoError(t, admin.Do(t.Context(), "ACL", "SETUSER", "crawler", "on", ">pw", "~*",
		"+get", "+set", "+eval", "+hgetall", "+select", "+hello", "+auth", "+client").Err())
	require.NoError(t, admin.Do(t.Context(), "ACL", "SETUSER", "db0only", "on", ">pw", "~*", "+@all", "-select").Err())
	for _, tc := range []struct {
		name, spec string
		refused    bool
	}{
		{"a user without PING", "redis://crawler:pw@" + srv.Addr + "/0", false},
		{"a user without PING, another database", "redis://crawler:pw@" + srv.Addr + "/3", false},
		{"a wrong password", "redis://crawler:nope@" + srv.Addr + "/0", true},
		{"a user who may not SELECT another database", "redis://db0only:pw@" + srv.Addr + "/3", true},
		{"no such database", "redis://" + srv.Addr + "/99", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := store.Parse(tc.spec)
			require.NoError(t, err)
			err = store.CheckRefused(context.Background(), s)
			if tc.refused {
				require.ErrorContains(t, err, "refused the connection")
			} else {
				require.NoError(t, err)
			}
		})
	}
}
