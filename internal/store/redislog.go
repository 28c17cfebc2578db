package store

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// RouteRedisLogs sends the Redis client's own log lines (it logs each
// failed dial of its pool, many a second while a server is down) through
// logger at debug level, in the process's chosen format: the dedup and
// stats stores log their failures themselves, once, at error level. The
// Redis client has one logger for the whole process.
func RouteRedisLogs(logger *slog.Logger) {
	redis.SetLogger(redisLogger{logger})
}

type redisLogger struct{ l *slog.Logger }

func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	if !r.l.Enabled(ctx, slog.LevelDebug) {
		return
	}
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	r.l.DebugContext(ctx, msg)
}
