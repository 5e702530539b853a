#!/usr/bin/env bash
# npm run bench:count -- <git-ref> [<git-ref> ...]   ("." is the working tree)
#
# What one request costs the gateway, counted rather than timed, so that two versions compare on a
# busy machine: for each ref, the gateway as `npm start` runs it (the build, npm start's Node flags)
# in front of the demo backend, 4 keep-alive clients sending GET /v1/pets (the 20-animal page).
#   instructions/request: valgrind's callgrind, instrumentation off for 3,000 warm-up requests, on
#     for the next 2,000 (the whole process: V8, Node, GC). Two runs of one build differ by up to
#     ~4 %: use RUNS=3 or more to tell a few percent. WARMUP and COUNTED change the two figures:
#     after 3,000 requests V8's optimizing compiler is still at work, on threads the count includes
#     (a third of a decision's count); with WARMUP=12000 COUNTED=4000 it is done before counting starts.
#     With tracing on, a full collection or an export landing inside the window or not moves one run
#     by 10 % and more: count over COUNTED=10000 requests.
#   allocated bytes/request: V8's own count (--trace-gc-nvp "allocated="), summed over 25,000
#     requests; repeatable to about 0.2 %.
#   promoted bytes/request: what V8's scavenges moved to the old generation over those requests
#     (--trace-gc-nvp "promoted="): objects that outlived two young collections, which every later
#     full collection marks again. A few hundred bytes without tracing; what spans held for their
#     batch add to it is what the bigger batches cost the collector.
# MODE=decision counts decision mode instead (GATEWAY_MODE=decision, with the bench's CORS origin,
# trusting loopback as nginx-decision does): each request is nginx's call to /decide/nginx about
# GET $URI (default /v1/pets; URI=/v1/pets/1 for the deprecated getPet).
# TRACING=<ratio> (0.01, 1.0, ...) counts the gateway with tracing on, as the bench's tracing
# scenario runs it: a parent-based ratio sampler, exporting over OTLP/HTTP to a live receiver
# (test/fixtures/otlp-receiver.ts as a program, which decodes every export). Any other OTEL_*
# variable in the environment reaches the gateway too (OTEL_EXPORTER_OTLP_PROTOCOL=http/json,
# OTEL_BSP_MAX_EXPORT_BATCH_SIZE=128). The last column then says, per run, the spans the receiver
# got and the gateway dropped: at 1.0, 2 per request (2 x (3,000 + COUNTED) in a callgrind run,
# 50,000 in the bytes run) and 0 dropped, or the counts do not stand for the bench's run.
# Needs valgrind (Debian: apt-get install valgrind). Each ref is built in a temporary worktree.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
RUNS="${RUNS:-2}" WARMUP="${WARMUP:-3000}" COUNTED="${COUNTED:-2000}"
command -v valgrind >/dev/null || { echo "bench:count needs valgrind (apt-get install valgrind)" >&2; exit 2; }
[ "$#" -gt 0 ] || { echo "usage: npm run bench:count -- <git-ref> [<git-ref> ...]  (\".\" is the working tree)" >&2; exit 2; }
WORK="$(mktemp -d)"
RECEIVER_PID=""
trap '[ -n "$RECEIVER_PID" ] && kill "$RECEIVER_PID" 2>/dev/null; for d in "$WORK"/tree-*; do [ -d "$d" ] && git -C "$ROOT" worktree remove --force "$d" 2>/dev/null; done; rm -rf "$WORK"' EXIT
KEY="count_0123456789abcdefghijklmnopqrstuvwxyzABCD"
printf '{"keys":[{"consumer":"count","sha256":"%s"}]}\n' "$(printf %s "$KEY" | sha256sum | cut -d' ' -f1)" > "$WORK/keys.json"
MODE="${MODE:-proxy}" URI="${URI:-/v1/pets}"
case "$MODE" in
  proxy) CONFIG=""; LOAD_ARGS=("$URI") ;;
  decision)
    CONFIG="$WORK/decision.json"
    printf '{"mode":"decision","server":{"trustedProxies":["127.0.0.1"]},"policies":{"cors":{"allowedOrigins":["https://shop.example"]}}}\n' > "$CONFIG"
    LOAD_ARGS=(/decide/nginx "$URI") ;;
  *) echo "MODE is proxy or decision, not $MODE" >&2; exit 2 ;;
esac
# vgdb (callgrind_control) finds the process by these, in both environments.
export USER="${USER:-$(id -un)}" LOGNAME="${LOGNAME:-$(id -un)}" HOST=127.0.0.1
FLAGS=$(cd "$ROOT" && node -e 'import("./scripts/start-command.ts").then((m) => console.log(m.GATEWAY_NODE_FLAGS.join(" ")))')

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

TRACING="${TRACING:-}"
if [ -n "$TRACING" ]; then
  RECEIVER_PORT=$(free_port)
  node "$ROOT/test/fixtures/otlp-receiver.ts" "$RECEIVER_PORT" >"$WORK/receiver.out" 2>&1 &
  RECEIVER_PID=$!
  for _ in $(seq 1 60); do grep -q listening "$WORK/receiver.out" && break; sleep 0.5; done
  export OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$RECEIVER_PORT" \
    OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG="$TRACING"
fi
# The receiver's span count so far (0 without tracing).
received() {
  [ -n "$TRACING" ] || { echo 0; return; }
  curl -s "http://127.0.0.1:$RECEIVER_PORT/counts" | node -e 'let s="";process.stdin.on("data",(d)=>s+=d).on("end",()=>console.log(JSON.parse(s).spans))'
}
# The gateway's gateway_trace_spans_dropped_total, read before it stops.
dropped() {
  curl -s "http://127.0.0.1:$OPS_PORT_/metrics" | awk '/^gateway_trace_spans_dropped_total/ {s += $2} END {printf "%d", s}'
}

# Starts the demo backend of this tree and the gateway of $1 (a built tree) with the Node options in $2.
start() {
  BACKEND_PORT=$(free_port); PORT_=$(free_port); OPS_PORT_=$(free_port)
  node "$ROOT/src/demo-backend-cli.ts" --port "$BACKEND_PORT" --host 127.0.0.1 >/dev/null 2>&1 &
  BACKEND_PID=$!
  (cd "$1" && PORT=$PORT_ OPS_PORT=$OPS_PORT_ HOST=127.0.0.1 GATEWAY_CONFIG="$CONFIG" LOG_LEVEL=info \
    UPSTREAM_URL="http://127.0.0.1:$BACKEND_PORT/v1" API_KEYS_FILE="$WORK/keys.json" \
    exec $2 >"$WORK/gateway.out" 2>&1) &
  GATEWAY_PID=$!
  for _ in $(seq 1 240); do
    curl -s -o /dev/null "http://127.0.0.1:$OPS_PORT_/healthz" && return 0
    sleep 0.5
  done
  echo "the gateway did not start: $(tail -3 "$WORK/gateway.out")" >&2; exit 1
}
stop() { kill "$GATEWAY_PID" "$BACKEND_PID" 2>/dev/null || true; wait "$GATEWAY_PID" "$BACKEND_PID" 2>/dev/null || true; }
load() { node "$ROOT/scripts/bench/count-load.ts" "$PORT_" "$KEY" "$1" "${LOAD_ARGS[@]}"; }

printf '%-12s %-9s %22s %24s %23s %s\n' ref commit "instructions/request" "allocated bytes/request" "promoted bytes/request" \
  "${TRACING:+spans received/dropped per run}"
n=0
for ref in "$@"; do
  n=$((n + 1))
  if [ "$ref" = "." ]; then tree="$ROOT"; commit="worktree"; else
    tree="$WORK/tree-$n"; commit=$(git -C "$ROOT" rev-parse --short "$ref")
    git -C "$ROOT" worktree add -q --detach "$tree" "$commit"
    ln -s "$ROOT/node_modules" "$tree/node_modules"
  fi
  (cd "$tree" && "$ROOT/node_modules/.bin/tsc" -p tsconfig.build.json)
  counts=() spans=()
  for run in $(seq 1 "$RUNS"); do
    before=$(received)
    start "$tree" "valgrind --tool=callgrind --smc-check=all-non-file --instr-atstart=no --callgrind-out-file=$WORK/cg.$n.$run node $FLAGS dist/src/main.js"
    load "$WARMUP"
    callgrind_control -i on "$GATEWAY_PID" >/dev/null
    load "$COUNTED"
    callgrind_control -i off "$GATEWAY_PID" >/dev/null
    callgrind_control -d "$GATEWAY_PID" >/dev/null
    lost=$(dropped)
    stop
    spans+=("$(($(received) - before))/$lost")
    total=$(grep -h '^totals:' "$WORK"/cg.$n.$run* | awk '{s += $2} END {printf "%.0f", s}')
    counts+=("$((total / COUNTED))")
  done
  before=$(received)
  start "$tree" "node $FLAGS --trace-gc-nvp dist/src/main.js"
  load 25000
  lost=$(dropped)
  stop
  spans+=("$(($(received) - before))/$lost")
  allocated=$(grep -o ' allocated=[0-9]*' "$WORK/gateway.out" | awk -F= '{s += $2} END {printf "%d", s / 25000}')
  promoted=$(grep ' gc=s ' "$WORK/gateway.out" | grep -o ' promoted=[0-9]*' | awk -F= '{s += $2} END {printf "%d", s / 25000}')
  printf '%-12s %-9s %22s %24s %23s %s\n' "$ref" "$commit" "$(IFS=,; echo "${counts[*]}")" "$allocated" "$promoted" \
    "${TRACING:+$(IFS=' '; echo "${spans[*]}")}"
done
