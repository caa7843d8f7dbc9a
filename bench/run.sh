#!/usr/bin/env bash
# bench/run.sh: build this engine's server, the Go SDK peers, the TypeScript
# peers and the standard-library floor, run every mcpbench scenario against
# all of them,
# interleaved, several runs each, over stdio and Streamable HTTP, in both
# protocol eras, then print one side-by-side table of medians with ratios
# against this engine, the modern-vs-legacy comparison and the performance targets
# judged met or missed, and draw the charts (SVG) next to the results.
#
#   bench/run.sh                      # defaults: every scenario, RUNS=3
#   RUNS=1 bench/run.sh               # a quick look: the quick-look defaults
#                                     # below, under 10 minutes on 2 cores
#   RUNS=5 DURATION=10 bench/run.sh   # longer, steadier numbers
#
# RUNS=1 is the quick look: every scenario, target, transport and era, each
# smaller. Unless set, DURATION=1, WARMUP=0.25, THROUGHPUT_CONC=16,
# CANCEL_N=1000, SETTLE=1, CPU_N=4, and the clients scenario opens
# CLIENTS_N=500 clients of the kinds CLIENTS_KINDS="session mixed" with
# CLIENTS_SETTLE=2 and CLIENTS_IDLE=3.
# The defaults listed below are those of RUNS of 2 and more.
#
# Knobs (environment):
#   RUNS=3            runs of each (scenario, transport, era, target)
#   DURATION=2        measured seconds of each load (throughput, mixed, errors)
#   WARMUP=0.5        unmeasured seconds before each load
#   CONC=16           concurrent calls (mixed, errors; cancel: parallel
#                     cancellation POSTs over legacy HTTP)
#   THROUGHPUT_CONC="16 64"   concurrent echo calls of the throughput runs,
#                     one run each
#   CANCEL_N="1000 10000"   cancel: sleep calls in flight, one cancel run
#                     per value (N, if set, is the default)
#   PROGRESS_EVERY=10 cancel: every k-th sleep call asks for progress, so
#                     progress after the cancellation is counted (0: none)
#   CPU_N=8           cancel-cpu: CPU-bound calls in flight
#   WINDOW=1          cancel, mixed: seconds late responses are counted for
#   SETTLE=2          cancel: seconds before the last memory sample
#   TIMEOUT=10        seconds any single call may take
#   STALL=5           cancel: seconds without progress after which sending the
#                     calls or the cancellations counts as failed
#   SCENARIOS="throughput cancel cancel-cpu mixed errors clients"   clients:
#                     N connected clients of each kind held open (HTTP only;
#                     its own knobs, CLIENTS_*, are in bench/clients.sh)
#   TRANSPORTS="stdio http"
#   ERAS="legacy modern"   protocol eras (mcpbench --era); a target that does
#                     not serve one is recorded as not applicable
#   TARGETS="toolgrain go-sdk mcp-go ts-sdk fastmcp stdlib"
#                     ts-sdk and fastmcp run on Node 22 from bench/peers/ts
#                     (npm ci there the first time; versions pinned in its
#                     package-lock.json) and are driven through mcpbench's
#                     --tool, --slow-tool and --cpu-tool flags
#   GATEWAY=no        yes: every target is measured also behind this engine, as
#                     gw-TARGET: our server mounting TARGET over stdio (its tools
#                     under their own names, none of its own), in the same runs,
#                     over the same transports and eras; mcpbench measures the
#                     gateway's process (the upstream's CPU is its own)
#   PROXY=no          yes (with GATEWAY=yes): every target is measured also
#                     behind the least a stdio proxy can do, as px-TARGET
#                     (bench/peers/proxy: the same --mount file, bytes copied
#                     both ways, nothing read), stdio only: the cost of the
#                     hop itself at that load, the floor under gw-TARGET's
#   HTTP=auto         our server over HTTP: auto (use it if it serves HTTP),
#                     yes (fail if it does not), no (stdio only)
#   PPROF=yes         throughput runs start each server with --pprof and
#                     read its allocation per call (no: skip)
#   BASELINE=(first of TARGETS)   target the ratios are computed against, and
#                     whose targets are judged
#   VERSUS=mcp-go     the SDK the targets compare with
#   FLOOR=stdlib      the floor the CPU target is relative to
#   OUT=bench/results/DATE   where the JSON results, the report and the
#                     charts go
#   PORT=18300        first HTTP port; each server takes the next ones
#   BEFORE_BIN        a server of this engine built from an earlier commit,
#                     measured as the target toolgrain-before (add it to
#                     TARGETS): the same run, before and after
#   TOOLGRAIN_FLAGS, GOSDK_FLAGS, MCPGO_FLAGS, STDLIB_FLAGS, TSSDK_FLAGS,
#   FASTMCP_FLAGS     extra server flags
#   GOSDK_MODERN_HTTP_FLAGS=--stateless   go-sdk's flags for modern HTTP runs:
#                     the SDK serves 2026-07-28 over HTTP in stateless mode only
#   MCPBENCH_FLAGS    extra mcpbench flags for every run
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

RUNS=${RUNS:-3}
if [ "$RUNS" = 1 ]; then
	# The quick look (see the top of this file); every knob set by the caller wins.
	: "${DURATION:=1}" "${WARMUP:=0.25}" "${THROUGHPUT_CONC:=16}" "${CANCEL_N:=${N:-1000}}" "${SETTLE:=1}" "${CPU_N:=4}"
	: "${CLIENTS_N:=500}" "${CLIENTS_KINDS:=session mixed}" "${CLIENTS_SETTLE:=2}" "${CLIENTS_IDLE:=3}"
fi
DURATION=${DURATION:-2}
WARMUP=${WARMUP:-0.5}
CONC=${CONC:-16}
CANCEL_N=${CANCEL_N:-${N:-"1000 10000"}}
PROGRESS_EVERY=${PROGRESS_EVERY:-10}
CPU_N=${CPU_N:-8}
WINDOW=${WINDOW:-1}
SETTLE=${SETTLE:-2}
TIMEOUT=${TIMEOUT:-10}
STALL=${STALL:-5}
THROUGHPUT_CONC=${THROUGHPUT_CONC:-"16 64"}
SCENARIOS=${SCENARIOS:-"throughput cancel cancel-cpu mixed errors clients"}
TRANSPORTS=${TRANSPORTS:-"stdio http"}
ERAS=${ERAS:-"legacy modern"}
TARGETS=${TARGETS:-"toolgrain go-sdk mcp-go ts-sdk fastmcp stdlib"}
GATEWAY=${GATEWAY:-no}
PROXY=${PROXY:-no}
if [ "$GATEWAY" = yes ]; then
	with=""
	for t in $TARGETS; do
		with="$with $t gw-$t"
		if [ "$PROXY" = yes ]; then with="$with px-$t"; fi
	done
	TARGETS=${with# }
fi
HTTP=${HTTP:-auto}
PPROF=${PPROF:-yes}
BASELINE=${BASELINE:-${TARGETS%% *}}
VERSUS=${VERSUS:-mcp-go}
FLOOR=${FLOOR:-stdlib}
GOSDK_MODERN_HTTP_FLAGS=${GOSDK_MODERN_HTTP_FLAGS:---stateless}
OUT=${OUT:-$root/bench/results/$(date +%Y%m%d-%H%M%S)}
port=${PORT:-18300}

say() { printf '%s\n' "$*" >&2; }
die() { say "run.sh: $*"; exit 1; }

# --- build ---------------------------------------------------------------
mkdir -p bin "$OUT"
case " $TARGETS " in *" toolgrain "* | *" gw-"* | *" px-toolgrain "*)
	[ -f cmd/server/main.go ] || die "./cmd/server does not exist yet: there is no server of ours to measure (set TARGETS=\"go-sdk mcp-go\" to measure the peers alone)"
	say "building bin/toolgrain-server"
	go build -o bin/toolgrain-server ./cmd/server || die "building ./cmd/server failed"
esac
say "building bin/mcpbench and the peers (bench/peers, its own module)"
go build -o bin/mcpbench ./bench/cmd/mcpbench || die "building mcpbench failed"
(cd bench/peers && go build -o ../../bin/peer-go-sdk ./gosdk && go build -o ../../bin/peer-mcp-go ./mcpgo &&
	go build -o ../../bin/peer-stdlib ./stdlib && go build -o ../../bin/peer-proxy ./proxy) ||
	die "building the peers failed (they need the Go module proxy once, for their SDKs)"
node=bench/peers/ts/node_modules/.bin/node
case " $TARGETS " in *" ts-sdk "* | *" fastmcp "* | *"-ts-sdk "* | *"-fastmcp "*)
	# A fresh install unless node_modules already matches the lock file.
	if ! cmp -s bench/peers/ts/package-lock.json bench/peers/ts/node_modules/.toolgrain-lock 2>/dev/null; then
		say "installing the TypeScript peers' packages and Node 22 (bench/peers/ts, npm ci)"
		(cd bench/peers/ts && npm ci --no-audit --no-fund --loglevel=error &&
			cp package-lock.json node_modules/.toolgrain-lock) ||
			die "npm ci in bench/peers/ts failed (it needs the npm registry once)"
	fi
	say "TypeScript peers on node $($node --version)"
esac

# json_words WORDS... prints the words as a JSON array of strings.
json_words() {
	local w out="" sep=""
	for w in "$@"; do
		w=${w//\\/\\\\}
		w=${w//\"/\\\"}
		out="$out$sep\"$w\""
		sep=,
	done
	printf '[%s]' "$out"
}

# server_cmd TARGET ERA TRANSPORT prints the command that starts TARGET
# (without transport flags).
server_cmd() {
	case $1 in
	gw-* | px-*)
		# The target behind this engine (gw-) or the least proxy (px-): its stdio
		# command in a --mount file, the same for both.
		local inner mount words
		inner=$(server_cmd "${1:3}" "$2" stdio)
		mount="${OUT#"$root"/}/mount-${1:3}.json" # relative, when under the checkout
		# shellcheck disable=SC2206 # the command is split into words on purpose
		words=($inner --transport stdio)
		printf '{"mcpServers": {"up": {"command": "%s", "args": %s, "noPrefix": true}}}\n' \
			"${words[0]}" "$(json_words "${words[@]:1}")" >"$mount"
		case $1 in
		gw-*) echo "bin/toolgrain-server --mount $mount --demo-tools=false --log-level error ${TOOLGRAIN_FLAGS:-}" ;;
		*) echo "bin/peer-proxy --mount $mount" ;;
		esac
		;;
	toolgrain) echo "bin/toolgrain-server ${TOOLGRAIN_FLAGS:-}" ;;
	go-sdk)
		local extra=""
		[ "$2/$3" = modern/http ] && extra=$GOSDK_MODERN_HTTP_FLAGS
		echo "bin/peer-go-sdk ${GOSDK_FLAGS:-} $extra"
		;;
	toolgrain-before)
		[ -x "${BEFORE_BIN:-}" ] || die "the target toolgrain-before needs BEFORE_BIN, this engine's server built from an earlier commit"
		echo "$BEFORE_BIN ${TOOLGRAIN_FLAGS:-}"
		;;
	mcp-go) echo "bin/peer-mcp-go ${MCPGO_FLAGS:-}" ;;
	stdlib) echo "bin/peer-stdlib ${STDLIB_FLAGS:-}" ;;
	ts-sdk) echo "$node bench/peers/ts/sdk.mjs ${TSSDK_FLAGS:-}" ;;
	fastmcp) echo "$node bench/peers/ts/fastmcp.mjs ${FASTMCP_FLAGS:-}" ;;
	*) die "unknown target $1 (known: toolgrain go-sdk mcp-go ts-sdk fastmcp stdlib, each also as gw-TARGET and px-TARGET)" ;;
	esac
}

# tool_flags TARGET SCENARIO prints mcpbench's flags that name the target's
# tools. The Go servers get the defaults (echo, sleep, spin); the TypeScript
# peers are driven through the flags, with the names and arguments their
# tools/list shows, as any server without the demonstration tools would be.
# The echo text is -payload's 32 bytes.
tool_flags() {
	local t=$1
	case $t in gw-* | px-*) t=${t:3} ;; esac
	case $t in
	ts-sdk | fastmcp)
		local text
		text=$(printf 'x%.0s' $(seq 32))
		printf -- "--tool echo --args {\"text\":\"%s\"} " "$text"
		case $2 in
		cancel) printf -- '--slow-tool sleep --slow-args {"ms":600000}' ;;
		mixed) printf -- '--slow-tool sleep --slow-args {"ms":50} -cancel-within 25ms' ;;
		cancel-cpu) printf -- '--cpu-tool spin --cpu-args {"ms":10000}' ;;
		esac
		;;
	esac
}

scenario_flags() {
	case $1 in
	throughput | mixed | errors) echo "-c $CONC -d $DURATION -warmup $WARMUP -timeout $TIMEOUT" ;;
	cancel) echo "-c $CONC -window $WINDOW -settle $SETTLE -timeout $TIMEOUT -stall $STALL -progress-every $PROGRESS_EVERY" ;;
	cancel-cpu) echo "-n $CPU_N -c $CONC -timeout $TIMEOUT -stall $STALL" ;;
	clients) ;; # bench/clients.sh
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

# next_port sets port to the next free-looking port.
next_port() { port=$((port + 1)); }

# start_http TARGET ERA [SERVER FLAGS]: starts TARGET on the next port; sets
# server_pid and url. Fails if the server exits or does not accept
# connections within 10 s.
start_http() {
	local target=$1 era=$2
	shift 2
	next_port
	url="http://127.0.0.1:$port/mcp"
	# shellcheck disable=SC2046 # the command is split into words on purpose
	$(server_cmd "$target" "$era" http) --transport http --addr "127.0.0.1:$port" "$@" 2>>"$OUT/servers.stderr" &
	server_pid=$!
	for _ in $(seq 100); do
		kill -0 "$server_pid" 2>/dev/null || { wait "$server_pid" 2>/dev/null || true; server_pid=""; return 1; }
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	stop_server
	return 1
}

# without PATTERN... prints the targets that match none of the patterns.
without() {
	local t p keep
	for t in $TARGETS; do
		keep=1
		for p in "$@"; do
			# shellcheck disable=SC2053 # the pattern is matched on purpose
			[[ $t == $p ]] && keep=""
		done
		[ -z "$keep" ] || printf '%s ' "$t"
	done
}

# The least proxy serves stdio only; the gateway is our server.
http_targets=$(without 'px-*')
if [[ " $TRANSPORTS " == *" http "* && " $TARGETS " == *" toolgrain "* ]]; then
	case $HTTP in
	no) http_targets=$(without toolgrain 'gw-*' 'px-*') ;;
	auto | yes)
		if start_http toolgrain legacy; then
			stop_server
		elif [ "$HTTP" = yes ]; then
			die "bin/toolgrain-server --transport http did not start (see $OUT/servers.stderr)"
		else
			say "our server does not serve HTTP (bin/toolgrain-server --transport http failed): HTTP rows are for the peers only"
			http_targets=$(without toolgrain 'gw-*' 'px-*')
		fi
		;;
	*) die "HTTP must be auto, yes or no" ;;
	esac
fi

# shellcheck source=bench/clients.sh
. "$root/bench/clients.sh"

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

scenario_list() {
	# throughput runs once per concurrency, cancel once per size; the others
	# once.
	local sc
	for sc in $SCENARIOS; do
		case $sc in
		throughput) for c in $THROUGHPUT_CONC; do printf 'throughput:%s ' "$c"; done ;;
		cancel) for n in $CANCEL_N; do printf 'cancel:%s ' "$n"; done ;;
		*) printf '%s ' "$sc" ;;
		esac
	done
}

failures=0
not_applicable=0
started=$(date +%s)
for run in $(seq "$RUNS"); do
	for item in $(scenario_list); do
		sc=${item%%:*}
		if [ "$sc" = clients ]; then
			run_clients "$run"
			continue
		fi
		flags=$(scenario_flags "$sc")
		label=$sc
		case $item in
		throughput:*)
			flags="-c ${item#*:} -d $DURATION -warmup $WARMUP -timeout $TIMEOUT"
			label="$sc at ${item#*:}"
			;;
		cancel:*)
			flags="-n ${item#*:} $flags"
			label="$sc of ${item#*:}"
			;;
		esac
		for tr in $TRANSPORTS; do
			for era in $ERAS; do
				list=$TARGETS
				[ "$tr" = http ] && list=$http_targets
				# shellcheck disable=SC2086
				for target in $(rotate $((run - 1)) $list); do
					say "run $run/$RUNS: $label over $tr, $era era: $target"
					out="$OUT/$target-$tr-$era-$sc.jsonl"
					pprof_server=() pprof_bench=()
					# Only the Go servers serve net/http/pprof.
					if [ "$PPROF" = yes ] && [ "$sc" = throughput ] && [[ $target != ts-sdk && $target != fastmcp && $target != px-* ]]; then
						next_port
						pprof_server=(--pprof "127.0.0.1:$port")
						pprof_bench=(--pprof "http://127.0.0.1:$port/debug/pprof/")
					fi
					rc=0
					# shellcheck disable=SC2046,SC2086
					if [ "$tr" = stdio ]; then
						bin/mcpbench "$sc" --stdio "$(server_cmd "$target" "$era" stdio) --transport stdio ${pprof_server[*]}" \
							--name "$target" --era "$era" "${pprof_bench[@]}" \
							--json -q --discard-stderr $flags $(tool_flags "$target" "$sc") ${MCPBENCH_FLAGS:-} >>"$out" 2>>"$OUT/mcpbench.stderr" || rc=$?
					else
						if ! start_http "$target" "$era" "${pprof_server[@]}"; then
							failures=$((failures + 1))
							say "  $target did not start over HTTP (see $OUT/servers.stderr)"
							continue
						fi
						bin/mcpbench "$sc" --http "$url" --pid "$server_pid" --name "$target" --era "$era" "${pprof_bench[@]}" \
							--json -q $flags $(tool_flags "$target" "$sc") ${MCPBENCH_FLAGS:-} >>"$out" 2>>"$OUT/mcpbench.stderr" || rc=$?
						stop_server
					fi
					case $rc in
					0) ;;
					3)
						not_applicable=$((not_applicable + 1))
						say "  not applicable: $target does not serve the $era era over $tr"
						;;
					*)
						failures=$((failures + 1))
						say "  failed (see $OUT/mcpbench.stderr)"
						;;
					esac
				done
			done
		done
	done
done

say "done in $(($(date +%s) - started)) s; results in $OUT"
[ "$not_applicable" -eq 0 ] || say "$not_applicable runs were not applicable (a target without an era); the report says n/a"
[ "$failures" -eq 0 ] || say "$failures runs failed; their rows are missing (see $OUT/mcpbench.stderr)"
cat "$OUT"/*.jsonl >/dev/null 2>&1 || die "no results"
bin/mcpbench report --baseline "$BASELINE" --versus "$VERSUS" --floor "$FLOOR" \
	--svg "$OUT" --md "$OUT/targets.md" "$OUT"/*.jsonl | tee "$OUT/report.txt"
say "charts: $(cd "$OUT" && ls ./*.svg 2>/dev/null | tr '\n' ' ')"
