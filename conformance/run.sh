#!/usr/bin/env bash
# Runs the official MCP conformance suite against `cmd/server --transport http --fixtures
# conformance` on a free loopback port, with Node 22; every version is pinned in package-lock.json.
# Each invocation starts a fresh server, so one run's state (tool-list changes, sessions) never
# leaks into the next. Exits with the suite's status.
#
#   bash conformance/run.sh ARGS...             @modelcontextprotocol/conformance 0.2.0-alpha.12
#   bash conformance/run.sh --legacy [ARGS...]  @modelcontextprotocol/conformance 0.1.16
#
# ARGS go to the suite's `server` command. The runs CI uses:
#
#   --requirements 2026-07-28   the 37 scored scenarios of MCP 2026-07-28, at that revision's
#                               stateless wire (per-request _meta, no initialize); the pending
#                               and tasks-extension scenarios of the set also run but are not
#                               scored (the exit status counts scored scenarios only)
#   --requirements 2025-11-25   the 30 scored scenarios of MCP 2025-11-25, at the initialize wire;
#                               server-session-lifecycle and the two pending ones run unscored
#   --suite pending --spec-version 2026-07-28
#                               exactly the pending json-schema-2020-12, http-header-validation
#                               and http-custom-header-server-validation, at the 2026-07-28 wire;
#                               here every failure counts
#   --suite pending --spec-version 2025-11-25
#                               the pending json-schema-2020-12 and server-sse-polling at the
#                               2025-11-25 wire (what `--legacy --suite pending` runs on 0.1.16)
#
# One scenario: `--scenario NAME` runs it at the wire it was introduced for (2026-07-28 for
# 2026-only scenarios, else 2025-11-25); add `--spec-version 2026-07-28` to run a scenario that
# applies to both revisions (e.g. json-schema-2020-12) at the modern wire. `--requirements` cannot
# be combined with --scenario, --suite or --spec-version.
#
# Why 0.1.16 stays runnable: 0.2.0-alpha.12's 2025-11-25 requirement set runs the same 30
# scenarios as 0.1.16's default suite (and the same two pending ones), and on this server each
# reports a superset of 0.1.16's checks: the same check ids, no assertion dropped (compare the -o
# output of both, or the sources at v0.1.16 and 0.2.0), plus wire-schema-valid, tools-name-format
# and server-session-id-visible-ascii. But two scenarios send different requests:
# server-sse-multiple-streams (default suite) and server-sse-polling (pending) in 0.1.16 post
# with `MCP-Protocol-Version: 2025-03-26` inside a session negotiated at 2025-11-25, a supported
# version other than the negotiated one, which the server must accept; 0.2.0 sends the negotiated
# version. Once the era is decided per message, partly from that header, this is the request
# most likely to regress, and only 0.1.16 sends it. CI runs both suites of 0.1.16 (about 30 s);
# drop them once the 2025-11-25 set covers that case.
set -euo pipefail
cd "$(dirname "$0")"

suite=(conformance)
if [[ ${1:-} == --legacy ]]; then
	shift
	suite=(node node_modules/conformance-legacy/dist/index.js)
fi

# A fresh install unless node_modules already matches the lock file.
if ! cmp -s package-lock.json node_modules/.toolgrain-lock 2>/dev/null; then
	npm ci --no-audit --no-fund --loglevel=error
	cp package-lock.json node_modules/.toolgrain-lock
fi
export PATH="$PWD/node_modules/.bin:$PATH" # node 22 and the suite, ahead of any system node
echo "node $(node --version), conformance $("${suite[@]}" --version)"

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
"${suite[@]}" server --url "$url" "$@" || status=$?
if [[ $status -ne 0 ]]; then
	echo "--- server log" >&2
	tail -n 50 "$work/server.log" >&2
fi
exit "$status"
