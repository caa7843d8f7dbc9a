#!/usr/bin/env bash
# bench/run.sh: build this engine's server and the two peer servers, run every
# mcpbench scenario against all three, interleaved, several runs each, over
# stdio and Streamable HTTP, then print one side-by-side table of medians with
# ratios against this engine.
#
#   bench/run.sh                      # defaults: 5 to 10 minutes on 2 cores
#   RUNS=1 N=2000 bench/run.sh        # a quick look
#   RUNS=5 DURATION=10 bench/run.sh   # longer, steadier numbers
#
# Knobs (environment):
#   RUNS=3            runs of each (scenario, transport, target)
#   DURATION=2        measured seconds of each load (throughput, mixed, errors)
#   WARMUP=0.5        unmeasured seconds before each load
#   CONC=16           concurrent calls
#   N=10000           cancel: sleep calls in flight
#   WINDOW=1          cancel, mixed: seconds late responses are counted for
#   SETTLE=2          cancel: seconds before the last memory sample
#   TIMEOUT=10        seconds any single call may take
#   STALL=5           cancel: seconds without progress after which sending the
#                     calls or the cancellations counts as failed
#   SCENARIOS="throughput cancel mixed errors"
#   TRANSPORTS="stdio http"
#   TARGETS="toolgrain go-sdk mcp-go"
#   HTTP=auto         our server over HTTP: auto (use it if it serves HTTP),
#                     yes (fail if it does not), no (stdio only)
#   BASELINE=(first of TARGETS)   target the ratios are computed against
#   OUT=bench/results/DATE   where the JSON results and the report go
#   PORT=18300        first HTTP port; each HTTP run takes the next one
#   TOOLGRAIN_FLAGS, GOSDK_FLAGS, MCPGO_FLAGS   extra server flags
#   MCPBENCH_FLAGS    extra mcpbench flags for every run
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

RUNS=${RUNS:-3}
DURATION=${DURATION:-2}
WARMUP=${WARMUP:-0.5}
CONC=${CONC:-16}
N=${N:-10000}
WINDOW=${WINDOW:-1}
SETTLE=${SETTLE:-2}
TIMEOUT=${TIMEOUT:-10}
STALL=${STALL:-5}
SCENARIOS=${SCENARIOS:-"throughput cancel mixed errors"}
TRANSPORTS=${TRANSPORTS:-"stdio http"}
TARGETS=${TARGETS:-"toolgrain go-sdk mcp-go"}
HTTP=${HTTP:-auto}
BASELINE=${BASELINE:-${TARGETS%% *}}
OUT=${OUT:-$root/bench/results/$(date +%Y%m%d-%H%M%S)}
port=${PORT:-18300}

say() { printf '%s\n' "$*" >&2; }
die() { say "run.sh: $*"; exit 1; }

# --- build ---------------------------------------------------------------
mkdir -p bin "$OUT"
case " $TARGETS " in *" toolgrain "*)
	[ -f cmd/server/main.go ] || die "./cmd/server does not exist yet: there is no server of ours to measure (set TARGETS=\"go-sdk mcp-go\" to measure the peers alone)"
	say "building bin/toolgrain-server"
	go build -o bin/toolgrain-server ./cmd/server || die "building ./cmd/server failed"
esac
say "building bin/mcpbench and the peers (bench/peers, its own module)"
go build -o bin/mcpbench ./bench/cmd/mcpbench || die "building mcpbench failed"
(cd bench/peers && go build -o ../../bin/peer-go-sdk ./gosdk && go build -o ../../bin/peer-mcp-go ./mcpgo) ||
	die "building the peers failed (they need the Go module proxy once, for their SDKs)"

# server_cmd TARGET prints the command that starts TARGET (without transport flags).
server_cmd() {
	case $1 in
	toolgrain) echo "bin/toolgrain-server ${TOOLGRAIN_FLAGS:-}" ;;
	go-sdk) echo "bin/peer-go-sdk ${GOSDK_FLAGS:-}" ;;
	mcp-go) echo "bin/peer-mcp-go ${MCPGO_FLAGS:-}" ;;
	*) die "unknown target $1 (known: toolgrain go-sdk mcp-go)" ;;
	esac
}

scenario_flags() {
	case $1 in
	throughput | mixed | errors) echo "-c $CONC -d $DURATION -warmup $WARMUP -timeout $TIMEOUT" ;;
	cancel) echo "-n $N -c $CONC -window $WINDOW -settle $SETTLE -timeout $TIMEOUT -stall $STALL" ;;
	*) die "unknown scenario $1" ;;
	esac
}

# --- HTTP servers ----------------------------------------------------------
server_pid=""
stop_server() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
		server_pid=""
	fi
}
trap stop_server EXIT

# start_http TARGET: starts TARGET on the next port; sets server_pid and url.
# Fails if the server exits or does not accept connections within 10 s.
start_http() {
	port=$((port + 1))
	url="http://127.0.0.1:$port/mcp"
	# shellcheck disable=SC2046 # the command is split into words on purpose
	$(server_cmd "$1") --transport http --addr "127.0.0.1:$port" 2>>"$OUT/servers.stderr" &
	server_pid=$!
	for _ in $(seq 100); do
		kill -0 "$server_pid" 2>/dev/null || { wait "$server_pid" 2>/dev/null || true; server_pid=""; return 1; }
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	stop_server
	return 1
}

http_targets=$TARGETS
if [[ " $TRANSPORTS " == *" http "* && " $TARGETS " == *" toolgrain "* ]]; then
	case $HTTP in
	no) http_targets=${TARGETS//toolgrain/} ;;
	auto | yes)
		if start_http toolgrain; then
			stop_server
		elif [ "$HTTP" = yes ]; then
			die "bin/toolgrain-server --transport http did not start (see $OUT/servers.stderr)"
		else
			say "our server does not serve HTTP (bin/toolgrain-server --transport http failed): HTTP rows are for the peers only"
			http_targets=${TARGETS//toolgrain/}
		fi
		;;
	*) die "HTTP must be auto, yes or no" ;;
	esac
fi

# --- runs ------------------------------------------------------------------
# rotate N WORDS...: the words, starting at the N-th (mod their count), so the
# order in which targets meet a warm or busy machine changes from run to run.
rotate() {
	local n=$1
	shift
	local words=("$@") i
	for ((i = 0; i < ${#words[@]}; i++)); do
		printf '%s ' "${words[$(((i + n) % ${#words[@]}))]}"
	done
}

failures=0
started=$(date +%s)
for run in $(seq "$RUNS"); do
	for sc in $SCENARIOS; do
		for tr in $TRANSPORTS; do
			list=$TARGETS
			[ "$tr" = http ] && list=$http_targets
			# shellcheck disable=SC2086
			for target in $(rotate $((run - 1)) $list); do
				say "run $run/$RUNS: $sc over $tr: $target"
				out="$OUT/$target-$tr-$sc.jsonl"
				# shellcheck disable=SC2046
				if [ "$tr" = stdio ]; then
					bin/mcpbench "$sc" --stdio "$(server_cmd "$target") --transport stdio" --name "$target" \
						--json -q --discard-stderr $(scenario_flags "$sc") ${MCPBENCH_FLAGS:-} >>"$out" 2>>"$OUT/mcpbench.stderr" ||
						{ failures=$((failures + 1)); say "  failed (see $OUT/mcpbench.stderr)"; }
				else
					if ! start_http "$target"; then
						failures=$((failures + 1))
						say "  $target did not start over HTTP (see $OUT/servers.stderr)"
						continue
					fi
					bin/mcpbench "$sc" --http "$url" --pid "$server_pid" --name "$target" \
						--json -q $(scenario_flags "$sc") ${MCPBENCH_FLAGS:-} >>"$out" 2>>"$OUT/mcpbench.stderr" ||
						{ failures=$((failures + 1)); say "  failed (see $OUT/mcpbench.stderr)"; }
					stop_server
				fi
			done
		done
	done
done

say "done in $(($(date +%s) - started)) s; results in $OUT"
[ "$failures" -eq 0 ] || say "$failures runs failed; their rows are missing (see $OUT/mcpbench.stderr)"
cat "$OUT"/*.jsonl >/dev/null 2>&1 || die "no results"
bin/mcpbench report --baseline "$BASELINE" "$OUT"/*.jsonl | tee "$OUT/report.txt"
