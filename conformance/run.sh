#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned with Node 22
# in package-lock.json) against `cmd/server --transport http --fixtures conformance` on a free
# loopback port. Extra arguments go to the suite, e.g. `--scenario tools-call-sampling` or
# `--suite pending`. Exits with the suite's status.
set -euo pipefail
cd "$(dirname "$0")"

# A fresh install unless node_modules already matches the lock file.
if ! cmp -s package-lock.json node_modules/.toolgrain-lock 2>/dev/null; then
	npm ci --no-audit --no-fund --loglevel=error
	cp package-lock.json node_modules/.toolgrain-lock
fi
export PATH="$PWD/node_modules/.bin:$PATH" # node 22 and the suite, ahead of any system node
echo "node $(node --version)"

work=$(mktemp -d)
pid=
cleanup() {
	if [[ -n $pid ]]; then
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/server" ../cmd/server
"$work/server" --transport http --addr 127.0.0.1:0 --fixtures conformance --log-level info 2>"$work/server.log" &
pid=$!

# The server logs its URL once it listens.
url=
for _ in $(seq 1 300); do
	url=$(grep -o '"url":"http://[^"]*"' "$work/server.log" | head -n 1 | cut -d'"' -f4 || true)
	[[ -n $url ]] && break
	kill -0 "$pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "server exited" >&2; exit 1; }
	sleep 0.1
done
[[ -n $url ]] || { cat "$work/server.log" >&2; echo "server did not start" >&2; exit 1; }
echo "server at $url"

status=0
conformance server --url "$url" "$@" || status=$?
if [[ $status -ne 0 ]]; then
	echo "--- server log" >&2
	tail -n 50 "$work/server.log" >&2
fi
exit "$status"
