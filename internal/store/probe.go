package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// probeTimeout bounds the check at start: a Redis that is down or slow is
// not a mistake in the configuration, and the proxy starts all the same.
const probeTimeout = 2 * time.Second

// CheckRefused connects to the Redis of s and reports whether the server
// refused the connection's setup: a wrong password (WRONGPASS, NOAUTH), a
// database number it does not have. Such a spec would fail every command
// for as long as the proxy runs. A server that is down, unreachable or
// slow is no error here (the proxy retries it at each use), nor is any
// spec that is not Redis.
func CheckRefused(ctx context.Context, s Spec) error {
	if s.Kind != Redis {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var c redis.UniversalClient
	if s.Cluster != nil {
		o := *s.Cluster
		o.MaxRetries, o.DialerRetries = -1, 1
		c = redis.NewClusterClient(&o)
	} else {
		o := *s.Redis
		o.MaxRetries, o.DialerRetries = -1, 1
		c = redis.NewClient(&o)
	}
	defer c.Close()
	err := c.Ping(ctx).Err()
	var reply redis.Error
	if errors.As(err, &reply) && refusedForGood(reply.Error()) && !pingDenied(reply.Error()) {
		return fmt.Errorf("%s: the Redis server refused the connection: %w", s.Raw, err)
	}
	return nil
}

// pingDenied: the reply refuses PING itself, so the connection's setup
// (AUTH, SELECT) went through. An operator may give a crawler's Redis user
// only the commands the stores use, and PING is not one of them.
func pingDenied(reply string) bool {
	return strings.HasPrefix(reply, "NOPERM") && strings.Contains(strings.ToLower(reply), "'ping'")
}

// refusedForGood tells the error replies that come from the spec (the
// password, user or database number), and so will not go away, from those
// of a server that is busy for now (LOADING, BUSY, max clients reached,
// CLUSTERDOWN).
func refusedForGood(reply string) bool {
	for _, p := range []string{"WRONGPASS", "NOAUTH", "NOPERM", "DENIED", "ERR DB index", "ERR invalid DB index", "ERR AUTH", "ERR invalid password", "ERR Client sent AUTH"} {
		if strings.HasPrefix(reply, p) {
			return true
		}
	}
	return false
}
