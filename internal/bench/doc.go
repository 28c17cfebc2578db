// Package bench holds the parts of warcbench that tests and the command
// share: a fast built-in origin to load (HTTP and HTTPS), the load generator
// (direct or through a proxy, URL lists or WARC replay) and its report, the
// sweep, the soak, and the dedup store fill (RunDedup).
package bench
