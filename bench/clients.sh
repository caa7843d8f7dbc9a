# bench/clients.sh: the clients scenario's runs (mcpbench clients), sourced by
# bench/run.sh, whose variables and functions (start_http, stop_server,
# next_port, rotate, OUT, http_targets, failures, not_applicable) it uses.
#
# Each run opens CLIENTS_N clients of every kind in CLIENTS_KINDS against a
# fresh server of every HTTP target, measures the server's memory per client,
# the time to open them, its CPU over CLIENTS_IDLE seconds of idle, and, on a
# server with the trigger tool (this engine's --touch-tool), how fast a list
# change and a resource update reach every open stream.
#
# Knobs (environment):
#   CLIENTS_N=9000          clients per run (this machine allows 20,000 open
#                           files per process; each client holds one)
#   CLIENTS_KINDS="session get listen mixed"
#   CLIENTS_IDLE=30         seconds of idle over which the server's CPU is read
#   CLIENTS_SETTLE=10       seconds after the last client opened, before the
#                           memory sample
#   CLIENTS_RUNS=1          runs of each (kind, target) per run of run.sh;
#                           memory figures do not depend on the machine's load
#   CLIENTS_TRIGGER=touch   the servers' tool that announces a change
#   CLIENTS_SUBSCRIBE=demo://watched   the resource every stream subscribes to
#   CLIENTS_FLAGS           extra mcpbench flags for the clients runs
#   CLIENTS_TARGETS         the targets (default: every HTTP target of the run)

CLIENTS_N=${CLIENTS_N:-9000}
CLIENTS_KINDS=${CLIENTS_KINDS:-"session get listen mixed"}
CLIENTS_IDLE=${CLIENTS_IDLE:-30}
CLIENTS_SETTLE=${CLIENTS_SETTLE:-10}
CLIENTS_RUNS=${CLIENTS_RUNS:-1}
CLIENTS_TRIGGER=${CLIENTS_TRIGGER:-touch}
CLIENTS_SUBSCRIBE=${CLIENTS_SUBSCRIBE:-demo://watched}

# clients_era KIND: the era a kind's control connection speaks.
clients_era() {
	case $1 in
	listen) echo modern ;;
	*) echo legacy ;;
	esac
}

# run_clients RUN: every kind against every HTTP target.
run_clients() {
	local run=$1 kind target era rc out i
	[[ " $TRANSPORTS " == *" http "* ]] || return 0
	for ((i = 0; i < CLIENTS_RUNS; i++)); do
		for kind in $CLIENTS_KINDS; do
			era=$(clients_era "$kind")
			# shellcheck disable=SC2086
			for target in $(rotate $((run - 1 + i)) ${CLIENTS_TARGETS:-$http_targets}); do
				say "run $run/$RUNS: clients ($kind, $CLIENTS_N) over http: $target"
				out="$OUT/$target-http-clients.jsonl"
				local extra=() bench_extra=()
				case $target in
				toolgrain | toolgrain-before | go-sdk | mcp-go | stdlib)
					# The Go servers serve net/http/pprof: their heap and goroutines per client.
					next_port
					extra=(--pprof "127.0.0.1:$port")
					bench_extra=(--pprof "http://127.0.0.1:$port/debug/pprof/")
					;;
				esac
				case $target in
				toolgrain | go-sdk | mcp-go) extra+=(--touch-tool) ;; # the trigger tool
				esac
				if ! start_http "$target" "$era" "${extra[@]}"; then
					failures=$((failures + 1))
					say "  $target did not start over HTTP (see $OUT/servers.stderr)"
					continue
				fi
				rc=0
				# shellcheck disable=SC2086
				bin/mcpbench clients --http "$url" --pid "$server_pid" "${bench_extra[@]}" \
					--name "$target" --era "$era" --kind "$kind" -n "$CLIENTS_N" --idle "$CLIENTS_IDLE" --settle "$CLIENTS_SETTLE" \
					--trigger "$CLIENTS_TRIGGER" --subscribe "$CLIENTS_SUBSCRIBE" \
					--json -q ${CLIENTS_FLAGS:-} >>"$out" 2>>"$OUT/mcpbench.stderr" || rc=$?
				stop_server
				case $rc in
				0) ;;
				3)
					not_applicable=$((not_applicable + 1))
					say "  not applicable: $target does not serve $kind clients"
					;;
				*)
					failures=$((failures + 1))
					say "  failed (see $OUT/mcpbench.stderr)"
					;;
				esac
			done
		done
	done
}
