#!/bin/bash
# verify.sh: run warcproxy.service under a real systemd and check it the way
# an operator would. Manual use only (root, a few minutes, ~400 MB in /tmp);
# not part of `make test` or CI.
#
#   sudo deploy/systemd/verify.sh [path/to/warcproxy]
#
# Builds a Debian bookworm tree with debootstrap (or copies VERIFY_TREE, a
# tree from an earlier run kept with KEEP=1), boots it with systemd-nspawn
# inside its own network namespace (only a loopback: nothing listens on the
# host), installs the unit as its header says, and checks: active, JSON
# logs, no hardening denials, limits, user and capabilities, CA files, HTTP
# and HTTPS captures, 407 without credentials, /metrics and /status,
# draining on stop, kill -9 -> restart -> .open recovery, exit status 2 not
# restarted, the sysctl file, systemd-analyze security, and the WARCs with
# warcio.js (internal/testutil/warcio, if `npm ci` has been run there).
# Needs debootstrap and systemd-container on the host. Prints PASS/FAIL per
# check and exits 1 if any failed.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$repo/bin/warcproxy}
[ "$(id -u)" = 0 ] || { echo "verify.sh: needs root" >&2; exit 2; }
[ -x "$bin" ] || { echo "verify.sh: no binary at $bin (make build)" >&2; exit 2; }
for c in debootstrap systemd-nspawn nsenter timeout; do
	command -v $c >/dev/null || { echo "verify.sh: needs $c (apt-get install debootstrap systemd-container)" >&2; exit 2; }
done

work=$(mktemp -d /tmp/warcproxy-verify.XXXXXX)
tree=$work/tree
nspawn_pid=
failed=0

cleanup() {
	if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
		inside systemctl poweroff >/dev/null 2>&1 || true
		for _ in $(seq 30); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 1; done
		kill "$nspawn_pid" 2>/dev/null || true
		wait "$nspawn_pid" 2>/dev/null || true
	fi
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $tree"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# inside CMD...: run a command inside the container (all its namespaces).
inside() { timeout 120 nsenter -t "$(pgrep -P "$nspawn_pid" | head -1)" -a -- "$@"; }
pass() { echo "PASS $1${2:+: $2}"; }
fail() { echo "FAIL $1${2:+: $2}"; failed=1; }
# expect NAME WANT GOT
expect() { if [ "$3" = "$2" ]; then pass "$1" "$3"; else fail "$1" "want $2, got $3"; fi; }

echo "== tree ($work)"
if [ -n "${VERIFY_TREE:-}" ]; then
	cp -a "$VERIFY_TREE" "$tree"
else
	timeout 900 nice debootstrap --variant=minbase \
		--include=systemd,systemd-sysv,dbus,curl,ca-certificates,openssl,python3,procps,iproute2 \
		bookworm "$tree" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
		{ tail "$work/debootstrap.log"; exit 1; }
fi
# What an installed Debian has and minbase lacks: without /etc/hosts, Go's
# resolver sends "localhost" to DNS.
printf '127.0.0.1\tlocalhost\n::1\tlocalhost\n' >"$tree/etc/hosts"
echo warcproxy-verify >"$tree/etc/hostname"
install -m 0755 "$bin" "$tree/usr/local/bin/warcproxy"
install -m 0644 "$repo/deploy/systemd/warcproxy.service" "$tree/etc/systemd/system/"
install -m 0644 "$repo/deploy/systemd/60-warcproxy.conf" "$tree/etc/sysctl.d/"
mkdir -p "$tree/root/origin"
echo "hello from origin" >"$tree/root/origin/index.html"
cat >"$tree/root/origin/slow.py" <<'EOF'
import http.server, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(3)
        body = ("slow %s\n" % self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", 8082), H).serve_forever()
EOF

echo "== boot"
systemd-nspawn -b -D "$tree" --register=no --keep-unit --private-network \
	--console=passive >"$work/nspawn.log" 2>&1 </dev/null &
nspawn_pid=$!
for _ in $(seq 60); do
	s=$(inside systemctl is-system-running 2>/dev/null || true)
	case $s in running | degraded) break ;; esac
	sleep 1
done
echo "systemd: $(inside systemctl --version | head -1), boot: $s"

echo "== install (the unit's header)"
inside sh -ec '
useradd --system --no-create-home --shell /usr/sbin/nologin warcproxy
install -d -o warcproxy -g warcproxy -m 0755 /srv/warcs
install -d -m 0700 /etc/warcproxy
printf "crawler:%s\n" "$(openssl rand -hex 16)" > /etc/warcproxy/proxy-auth
chmod 0600 /etc/warcproxy/proxy-auth
systemctl daemon-reload && systemctl enable --now warcproxy' 2>&1 | sed 's/^/  /'
inside systemd-run -q --unit origin-http -p WorkingDirectory=/root/origin python3 -m http.server --bind 127.0.0.1 8081
inside sh -c 'openssl req -x509 -newkey rsa:2048 -nodes -keyout /root/origin/o.key -out /root/origin/o.crt -days 2 -subj /CN=localhost 2>/dev/null'
inside systemd-run -q --unit origin-https openssl s_server -accept 127.0.0.1:8443 -cert /root/origin/o.crt -key /root/origin/o.key -www -quiet
inside systemd-run -q --unit origin-slow python3 /root/origin/slow.py
sleep 2

echo "== checks"
auth=$(cat "$tree/etc/warcproxy/proxy-auth")
ca=/var/lib/warcproxy/warcproxy-ca.crt
px="-x http://127.0.0.1:8000 -U $auth"
code() { inside curl -s -o /dev/null -m 20 -w '%{http_code}' "$@" || true; }

expect "systemctl is-active" active "$(inside systemctl is-active warcproxy)"
pid=$(inside systemctl show -P MainPID warcproxy)
inside journalctl -u warcproxy -o cat --no-pager | grep -q '"msg":"warcproxy listening"' &&
	pass "journal has JSON lines" || fail "journal has JSON lines"
nofile=$(inside awk '/Max open files/ {print $4}' /proc/"$pid"/limits)
init_nofile=$(inside awk '/Max open files/ {print $5}' /proc/1/limits)
if [ "$nofile" = 65536 ]; then pass "LimitNOFILE" 65536
elif [ "$init_nofile" != unlimited ] && [ "$init_nofile" -lt 65536 ]; then
	echo "SKIP LimitNOFILE: got $nofile; the container's systemd has hard limit $init_nofile and cannot raise it"
else fail "LimitNOFILE" "got $nofile"; fi
expect "user" warcproxy "$(inside ps -o user= -p "$pid")"
expect "CapEff" 0000000000000000 "$(inside awk '/CapEff/ {print $2}' /proc/"$pid"/status)"
expect "CapBnd" 0000000000000000 "$(inside awk '/CapBnd/ {print $2}' /proc/"$pid"/status)"
expect "/var/lib/warcproxy mode" 700 "$(inside stat -c %a /var/lib/warcproxy)"
expect "CA key mode" 600 "$(inside stat -c %a /var/lib/warcproxy/warcproxy-ca.pem)"
expect "HTTP through the proxy" 200 "$(code $px http://127.0.0.1:8081/index.html)"
expect "HTTPS through the proxy" 200 "$(code --cacert $ca $px https://localhost:8443/)"
expect "no credentials" 407 "$(code -x http://127.0.0.1:8000 http://127.0.0.1:8081/)"
expect "/status on 127.0.0.1:9100" 200 "$(code http://127.0.0.1:9100/status)"
expect "/metrics on 127.0.0.1:9100" 200 "$(code http://127.0.0.1:9100/metrics)"

# Stop with 20 exchanges in flight against an origin that takes 3 s.
inside sh -c "for i in \$(seq 20); do curl -s -o /dev/null -w '%{http_code}\n' -x http://127.0.0.1:8000 -U $auth http://127.0.0.1:8082/drain-\$i >> /root/drain.codes & done; sleep 1"
t0=$(date +%s%N)
inside systemctl stop warcproxy
ms=$((($(date +%s%N) - t0) / 1000000))
sleep 3
if [ "$ms" -lt 90000 ]; then pass "stop under load" "${ms} ms"; else fail "stop under load" "${ms} ms"; fi
expect "in-flight answered during drain" "20 200" "$(sort "$tree/root/drain.codes" | uniq -c | awk '{print $1, $2}' | paste -sd,)"
expect ".open files after stop" 0 "$(find "$tree/srv/warcs" -name '*.open' | wc -l)"
expect "drained exchanges recorded" 20 "$(zcat "$tree"/srv/warcs/*.warc.gz | grep -a -c '^WARC-Target-URI: http://127.0.0.1:8082/drain-.*' | awk '{print $1/2}')"

# kill -9 with files open: restart after RestartSec, recovery on start.
inside systemctl start warcproxy
sleep 1
code $px 'http://127.0.0.1:8081/index.html?before-kill' >/dev/null
opened=$(cd "$tree/srv/warcs" && ls -- *.open 2>/dev/null || true)
pid=$(inside systemctl show -P MainPID warcproxy)
inside kill -9 "$pid"
sleep 8
expect "restarted after kill -9" "active 1" "$(inside systemctl is-active warcproxy) $(inside systemctl show -P NRestarts warcproxy)"
inside journalctl -u warcproxy -o cat --no-pager | grep -q '"msg":"crash recovery: recovered warc file"' &&
	pass "recovery logged" || fail "recovery logged"
recovered=0
for f in $opened; do [ -f "$tree/srv/warcs/${f%.open}" ] && recovered=$((recovered + 1)); done
expect ".open files renamed by recovery" "$(echo $opened | wc -w)" "$recovered"

# A bad flag exits 2 and is not restarted.
inside sh -c 'mkdir -p /etc/systemd/system/warcproxy.service.d &&
printf "[Service]\nExecStart=\nExecStart=/usr/local/bin/warcproxy --no-such-flag\n" > /etc/systemd/system/warcproxy.service.d/50-verify-badflag.conf &&
systemctl daemon-reload && systemctl reset-failed warcproxy; systemctl restart warcproxy' || true
sleep 8
expect "bad flag: status, restarts" "2 0" "$(inside systemctl show -P ExecMainStatus warcproxy) $(inside systemctl show -P NRestarts warcproxy)"
inside sh -c 'rm /etc/systemd/system/warcproxy.service.d/50-verify-badflag.conf && systemctl daemon-reload && systemctl reset-failed warcproxy'

# Hardening denials would show as EPERM/EACCES in the log, or a failed start.
if inside journalctl -u warcproxy -o cat --no-pager | grep -iE 'operation not permitted|permission denied|address family not supported|read-only file system'; then
	fail "no hardening denials in the journal"
else pass "no hardening denials in the journal"; fi

echo "-- sysctl --system (keys the container may not set are listed)"
inside sysctl --system 2>&1 | grep -E 'warcproxy|denied|^net\.' | sed 's/^/  /' || true
echo "-- $(inside systemd-analyze security warcproxy --no-pager | tail -1)"

if [ -d "$repo/internal/testutil/warcio/node_modules" ] && command -v node >/dev/null; then
	if node "$repo/internal/testutil/warcio/verify.mjs" --no-open "$tree"/srv/warcs/*.warc.gz >"$work/warcio.json"; then
		pass "warcio.js reads every WARC" "$(ls "$tree"/srv/warcs/*.warc.gz | wc -l) files"
	else fail "warcio.js reads every WARC" "$(head -c 2000 "$work/warcio.json")"; fi
else
	gzip -t "$tree"/srv/warcs/*.warc.gz && pass "gzip -t on every WARC (no warcio.js: npm ci --prefix internal/testutil/warcio)" ||
		fail "gzip -t on every WARC"
fi

[ "$failed" = 0 ] && echo "== all checks passed" || echo "== some checks FAILED"
exit "$failed"
