# Sourced by the device scripts (GPU machine, one H200, no network). Run from the repo root.
# Unpacks the SGLang bundle (.bundle/, made by .device/make_bundle.sh), installs this package
# under /tmp/as-site (entry point metadata included, so SGLang's load_plugins() finds it),
# and defines start_server / stop_server. Every wait is bounded.
set -uo pipefail
T_START=${T_START:-$(date +%s)}
REPO="$PWD"
OUT="${OUT:-/tmp/as-out}"; mkdir -p "$OUT"
SGL=/tmp/sgl
export PYTHONUNBUFFERED=1 NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
say() { echo "[device +$(( $(date +%s) - T_START ))s] $*"; }

# Made here by `bash scripts/device/setup_local.sh`, which packs it at `xz -T2 -9e` (the recipe's
# `-6` makes 57.0 MB: session 31) without jedi's typeshed stubs (read only by IPython's completion;
# session 44: 54.8 MB with ~11.9 MB of tracked files passed the 64-MiB transfer limit): 52.9 MB;
# 49.9 MB since session 50 (setup_local.sh's header lists what else it leaves out).
B="$REPO/.bundle/sglang-site.tar.xz"
[ -f "$B" ] || { say "missing $B (made here by scripts/device/setup_local.sh)"; exit 2; }
if [ "$(cat $SGL/.sig 2>/dev/null)" != "$(stat -c %s "$B")" ]; then
  rm -rf "$SGL/site"; mkdir -p "$SGL"; tar -xJf "$B" -C "$SGL" && stat -c %s "$B" > "$SGL/.sig"
  say "unpacked bundle"
fi
export TVM_FFI_CACHE_DIR="$SGL/cache/tvm-ffi" TRITON_CACHE_DIR="$SGL/cache/triton"
export FLASHINFER_WORKSPACE_BASE="$SGL/cache/fi" TORCHINDUCTOR_CACHE_DIR="$SGL/cache/inductor"
mkdir -p "$TVM_FFI_CACHE_DIR" "$TRITON_CACHE_DIR" "$FLASHINFER_WORKSPACE_BASE" "$TORCHINDUCTOR_CACHE_DIR"
if [ -f "$REPO/.bundle/jitcache.tar.xz" ] && [ ! -f "$SGL/cache/.seeded" ]; then
  tar -xJf "$REPO/.bundle/jitcache.tar.xz" -C "$SGL/cache" && touch "$SGL/cache/.seeded" && say "seeded JIT caches"
fi
export SGLANG_DISABLED_MODEL_ARCHS="$(cd $SGL/site/sglang/srt/models && ls *.py | sed 's/\.py$//' \
  | grep -v -x -e llama -e llama_eagle3 -e qwen3_moe -e deepseek_v2 -e __init__ -e registry | paste -sd, -)"

# This package, laid out as it installs (kernels/, patches/, benchmarks/ under our namespace).
# Reinstalled only when the sources changed: a script started beside a running one (the soak
# beside a sweep) must not pull the package out from under it.
AS=/tmp/as-site
SRC_SIG=$(cd "$REPO" && find adaptive_spec kernels patches benchmarks pyproject.toml -name '*.py' -o -name '*.toml' \
  | sort | xargs cat | md5sum | cut -d' ' -f1)
if [ "$(cat "$AS/.sig" 2>/dev/null)" != "$SRC_SIG" ]; then
rm -rf "$AS"; mkdir -p "$AS"
cp -r "$REPO/adaptive_spec" "$AS/"
cp -r "$REPO/kernels" "$AS/adaptive_spec/kernels"; cp -r "$REPO/patches" "$AS/adaptive_spec/patches"
mkdir -p "$AS/adaptive_spec/bench"; find "$REPO/benchmarks" -maxdepth 1 -name '*.py' -exec cp {} "$AS/adaptive_spec/bench/" \;
DI="$AS/adaptive_spec-0.1.0.dist-info"; mkdir -p "$DI"
printf 'Metadata-Version: 2.1\nName: adaptive-spec\nVersion: 0.1.0\n' > "$DI/METADATA"
python3 - "$REPO/pyproject.toml" > "$DI/entry_points.txt" <<'PY'
import sys, tomllib
p = tomllib.load(open(sys.argv[1], "rb"))["project"]
print("[console_scripts]"); [print(f"{k} = {v}") for k, v in p["scripts"].items()]
for group, eps in p["entry-points"].items():
    print(f"[{group}]"); [print(f"{k} = {v}") for k, v in eps.items()]
PY
echo "$SRC_SIG" > "$AS/.sig"
fi
export PYTHONPATH="$AS:$SGL/site${PYTHONPATH:+:$PYTHONPATH}"
# which code runs (no .git here): results record it, code_digest.py --find maps it to a commit
ADAPTIVE_SPEC_CODE_DIGEST=$(python3 "$REPO/benchmarks/code_digest.py" --root "$REPO" 2>/dev/null) || true
export ADAPTIVE_SPEC_CODE_DIGEST; echo "${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}" > "$OUT/code-digest.txt" 2>/dev/null || true

CUR_PID=""
trap '[ -n "$CUR_PID" ] && kill -KILL -- -"$CUR_PID" 2>/dev/null' EXIT INT TERM

SERVER_COMMON=(--host 127.0.0.1 --skip-tokenizer-init --attention-backend triton --sampling-backend pytorch
  --grammar-backend none --dtype bfloat16 --context-length 4096 --cuda-graph-backend-prefill disabled
  --random-seed 0 --log-level info)

start_server() {  # $1 name, $2 port, $3 log, rest: launcher + args. Sets CUR_PID.
  local name=$1 port=$2 log=$3; shift 3
  echo "======== $name $(date -u +%H:%M:%S) $*" >> "$log"
  setsid "$@" --port "$port" "${SERVER_COMMON[@]}" >> "$log" 2>&1 &
  CUR_PID=$!
  say "started $name (pid $CUR_PID, port $port)"
}

stop_server() {
  [ -n "$CUR_PID" ] || return 0
  kill -TERM -- -"$CUR_PID" 2>/dev/null
  for _ in $(seq 1 20); do kill -0 "$CUR_PID" 2>/dev/null || break; sleep 1; done
  kill -KILL -- -"$CUR_PID" 2>/dev/null; sleep 2; CUR_PID=""
}

# The synthetic Llama-3-8B-shaped pair (repeat target; aligned = always-right draft, random =
# always-wrong), built once per machine with the recipe of ../shared/device (carried as .device/).
MODELS=/tmp/models-8b
build_models() {
  [ -f "$MODELS/.done" ] && return 0
  say "building 8B-shaped synthetic models"
  python3 .device/make_models.py --out "$MODELS" --drafts aligned,random --hidden 4096 --inter 14336 \
    --layers 32 --heads 32 --kv-heads 8 --vocab 128256 && touch "$MODELS/.done" || { say "models failed"; exit 3; }
}
CUDA_GRAPH=(--cuda-graph-backend-decode full --cuda-graph-bs-decode 1 2 4 8 16 32 64 128 256)
GRAPH=("${CUDA_GRAPH[@]}" --max-running-requests 256 --mem-fraction-static 0.5)
EAGLE=(--speculative-algorithm EAGLE3 --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4)
LOG="$OUT/servers.log"
left() { echo $(( DEADLINE_S - $(date +%s) + T_START )); }

pack_jitcache() {
  ( cd "$SGL/cache" && tar -cf - tvm-ffi triton fi inductor 2>/dev/null | xz -T0 -3 > "$OUT/jitcache.tar.xz" )
}

# The synthetic pair of benchmarks/models.py in $1 with the drafts $2 (comma list), builder
# flags after (e.g. --preset 8b); kept when the target and every draft are there already.
build_pair() {
  local dir=$1 drafts=$2 d; shift 2
  local have=1; [ -f "$dir/target/model.safetensors" ] || have=0
  for d in ${drafts//,/ }; do [ -f "$dir/draft-${d/:/-}/model.safetensors" ] || have=0; done
  [ $have = 1 ] && return 0
  say "building $dir ($drafts)"
  ( cd /tmp && python3 -m adaptive_spec.bench.models --out "$dir" --drafts "$drafts" "$@" ) \
    >> "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; return 3; }
}

# Two pairs at once, one per GPU: $1 dir and $2 drafts on GPU 0, $3 and $4 on GPU 1, builder
# flags after (the same for both); exits 3 when either build fails.
build_two_pairs() {
  local d0=$1 r0=$2 d1=$3 r1=$4 p0 p1; shift 4
  ( export CUDA_VISIBLE_DEVICES=0; build_pair "$d0" "$r0" "$@" ) & p0=$!
  ( export CUDA_VISIBLE_DEVICES=1; build_pair "$d1" "$r1" "$@" ) & p1=$!
  { wait $p0 && wait $p1; } || { tail -30 "$OUT/build.log"; exit 3; }
  say "models built"
}

# The sweep settings of the 2026-11-29 runs (closed loop, N = 1..256, 192 new tokens, 5-s
# levels after a warm-up wave each, steady window); each call adds systems, models, output.
SWEEP_FLAGS=(--concurrency 1,4,16,32,64,128,256 --new-tokens 192 --prompt-len 40,128 --temperature 0
  --time-budget-s 5 --drain-s 2 --requests-per-level 100000 --start-stagger-s 10
  --server-arg "--max-running-requests 260" --quiet)

# Sessions 4-5: spread lengths, a warm-up wave per level, longer levels at 128/256, metrics and
# our decision log; `sweep` runs one on one GPU (systems: FOUR or a list).
FOUR=plain,eagle3,builtin-adaptive,adaptive-spec:goodput
# DIAL (default 0.7; 0.5, 0.9, or random: the always-wrong draft) -> DRAFT, the model builder's
# draft spec, and TAG, the run's name: $1-$DIAL, or $1-wrong
dial_draft() {
  DIAL=${DIAL:-0.7}
  case "$DIAL" in
  random) DRAFT=random; TAG=$1-wrong ;;
  *) DRAFT=dial:$DIAL; TAG=$1-$DIAL ;;
  esac
}
# Issue 3's threshold table with one setting for both drafts (sessions 19, 24): the load threshold
# above the servers' cap of running requests (260) and the queue rule off, so the acceptance floor
# (1.5, the default) alone decides. The setting this GPU and these drafts call for, not a
# load-adaptive one.
THRESHOLD_BOTH="adaptive-spec:threshold=--adaptive-spec-threshold 384 --adaptive-spec-queue-threshold off"
RUN_FLAGS=(--new-tokens-spread 0.5 --warmup-tokens ${WARMUP:-128} --time-budget-from ${BUDGET_FROM:-128:7,256:8}
  --server-arg=--enable-metrics --system-args "adaptive-spec:goodput+=--adaptive-spec-log-decisions")
# Sessions 1-32's sweeps ran prefill CUDA graphs disabled (the sweep's own flag until session 33,
# which leaves SGLang's default, breakable): these scripts keep their runs' setting unless
# PREFILL_GRAPH names a backend (breakable, tc_piecewise, full)
RUN_FLAGS+=(--server-arg "--cuda-graph-backend-prefill ${PREFILL_GRAPH:-disabled}")

# The host's physical cores (with their hyperthread siblings) split between the two GPUs'
# sweeps, since session 9: one plain server's TPOT moved 12.9-16.9 ms between repeats of a run
# while the other GPU's sweep shared the host. Servers and load generator inherit it. One GPU
# on the machine, a multi-GPU sweep ("0,1") or no taskset: all cores.
cores_for() {
  if [[ "$1" == *,* ]] || ! command -v taskset >/dev/null \
     || (( $(nvidia-smi -L 2>/dev/null | grep -c '^GPU') < 2 )); then
    echo "0-$(( $(nproc) - 1 ))"; return
  fi
  local c
  c=$(python3 - "$1" <<'PY'
import glob, sys
cores = {}
for d in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/topology"):
    cpu = int(d.split("/")[-2][3:])
    key = tuple(int(open(f"{d}/{f}").read()) for f in ("physical_package_id", "core_id"))
    cores.setdefault(key, []).append(cpu)
keys = sorted(cores)
half = keys[:len(keys) // 2] if sys.argv[1] == "0" else keys[len(keys) // 2:]
print(",".join(str(c) for k in half for c in sorted(cores[k])))
PY
)
  [ -n "$c" ] && echo "$c" || echo "0-$(( $(nproc) - 1 ))"
}

# core_speed.py's table into the run's log, its JSON to /tmp (not a result schema: the run log
# is what gets committed); prints the fastest two vCPUs as "A,B" (for --pin-scheduler-cpus)
core_probe() {
  python3 "$REPO/scripts/device/core_speed.py" --rounds 3 --ms 150 --out "/tmp/core-speed-$1.json" >&2
  python3 - "/tmp/core-speed-$1.json" <<'PY'
import json, sys
cpus = json.load(open(sys.argv[1]))["cpus"]
fast = sorted(cpus, key=lambda c: -cpus[c]["vs_fastest"])
print(",".join(fast[:2]))
PY
}

# Sessions 32-34's setting: the phase clocks in 1-s windows, --stream-interval 4, every scheduler
# pinned to the probe's fastest two vCPUs (`core_probe $1-before`); sets PIN and adds to RUN_FLAGS.
pinned_setup() {
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_PHASE_TIMING=1 \
    ADAPTIVE_SPEC_PHASE_WINDOW_S=1
  PIN=$(core_probe $1-before); say "pinning schedulers to vCPUs $PIN"
  RUN_FLAGS+=(--start-timeout-s 200 --server-arg "--stream-interval 4" --pin-scheduler-cpus "$PIN")
}

# pinned_setup with the dense 8B pair at dial 0.7 (built in /tmp/soak-8b)
dense_pinned_setup() {
  pinned_setup "$1"
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
}

sweep() {  # $1 GPU, $2 name, $3 target dir, $4 draft dir, $5 systems, rest: extra sweep flags
  local gpu=$1 name=$2 target=$3 draft=$4 systems=$5; shift 5
  local pin=(); command -v taskset >/dev/null && pin=(taskset -c "$(cores_for "$gpu")")
  bash "$REPO/scripts/device/fresh_log_dir.sh" "/tmp/logs-$name" "$T_START"
  ( cd /tmp && CUDA_VISIBLE_DEVICES=$gpu "${pin[@]}" python3 -m adaptive_spec.bench.cli sweep "${SWEEP_FLAGS[@]}" \
      "${RUN_FLAGS[@]}" --deadline-s $(( $(left) - 25 )) --target "$target" --draft "$draft" \
      --name "$name" --systems "$systems" --metrics-out "/tmp/metrics-$name.txt" \
      --log-dir "/tmp/logs-$name" --out "$OUT/sweep-$name.json" "$@" > "/tmp/sweep-$name.txt" 2>&1 )
  tail -32 "/tmp/sweep-$name.txt"
}

# A load pattern (step, sawtooth, bursty) between 1 and 128 streams, plain and goodput, on GPU $1:
# $2 the pattern, $3 the pair dir (its dial-0.7 draft), rest: extra sweep flags. Writes
# $OUT/sweep-$2-dial-0.7.json, the run's text in /tmp/sweep-$2.txt, logs in /tmp/logs-$2.
pattern_load() {
  local gpu=$1 pattern=$2 dir=$3; shift 3
  bash "$REPO/scripts/device/fresh_log_dir.sh" "/tmp/logs-$pattern" "$T_START"
  ( cd /tmp && CUDA_VISIBLE_DEVICES=$gpu python3 -m adaptive_spec.bench.cli sweep --pattern "$pattern" \
      --pattern-low 1 --pattern-high 128 --new-tokens 192 --prompt-len 40,128 \
      --new-tokens-spread 0.5 --warmup-tokens 128 --drain-s 2 --start-stagger-s 10 \
      --deadline-s $(( $(left) - 30 )) --quiet \
      --server-arg "--max-running-requests 260" --server-arg=--enable-metrics \
      --system-args "adaptive-spec:goodput+=--adaptive-spec-log-decisions" \
      --target "$dir/target" --draft "$dir/draft-dial-0.7" --name "$pattern-dial-0.7" \
      --systems plain,adaptive-spec:goodput --log-dir "/tmp/logs-$pattern" \
      --out "$OUT/sweep-$pattern-dial-0.7.json" "$@" > "/tmp/sweep-$pattern.txt" 2>&1 )
  tail -20 "/tmp/sweep-$pattern.txt"
}

# The step load 1 -> 128 -> 1 (15 s a phase) on GPU 0, pair dir $1; the decision lines in
# $OUT/step-decisions.log.
step_load() {
  pattern_load 0 step "$1" --duration-s 45 --sample-interval-s 0.2
  grep -h "adaptive_spec decision" /tmp/logs-step/*.log | head -400 > "$OUT/step-decisions.log"
}

# step_load on pair dir $1, then goodput's follow record (issue 5: how many decisions after a
# size change each switch came) and the server logs packed into $OUT/$2
step_load_follow() {
  step_load "$1"
  python3 - "$OUT"/sweep-step-dial-0.7.json <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["systems"]["adaptive-spec:goodput"].get("final_status") or []:
    for e in r.get("follow") or []:
        print("follow", json.dumps(e))
PY
  pack_logs "$2" /tmp/logs-step/*.log
}

# The phase clocks' table (ms of wall time per decode step by scheduler phase, every server,
# plain included: ADAPTIVE_SPEC_PHASE_TIMING) of the sweep logs in $1, as text and JSON; further
# arguments go to phase_summary (--bands ...). From /tmp: the repo's own adaptive_spec/ would
# shadow the installed copy that holds `bench`.
phases() {
  local name; name=$(basename "$1")
  ( cd /tmp && python3 -m adaptive_spec.bench.phase_summary --json "$OUT/phases-${name#logs-}.json" "${@:2}" "$1"/server-*.log ) \
    | tee "$OUT/phases-${name#logs-}.txt"
}

# stack_summary of a sweep's server logs (ADAPTIVE_SPEC_STACK_SAMPLER=1) at $2 running requests
stacks() {
  local name; name=$(basename "$1")
  ( cd /tmp && python3 -m adaptive_spec.bench.stack_summary --near "$2" --json "$OUT/stacks-${name#logs-}.json" \
      "$1"/server-*.log ) | tee "$OUT/stacks-${name#logs-}-near$2.txt"
}

# $OUT/$1 (tar.xz): of each server log given, our lines and errors, and SGLang's batch lines.
pack_logs() {
  local archive=$1 f; shift
  for f in "$@"; do
    grep -E "adaptive_spec|Traceback|rror" "$f" | grep -v "GET /adaptive_spec" | head -400 > "$f.excerpt"
    grep -A60 "Traceback" "$f" | head -200 >> "$f.excerpt"  # the whole first tracebacks (session 12 lost one)
    grep -E "Decode batch|Prefill batch" "$f" | tail -3000 > "$f.batches"
  done
  tar -cJf "$OUT/$archive" $(for f in "$@"; do echo "$f.excerpt" "$f.batches"; done) 2>/dev/null
}

# After a call's sweeps: our start-up lines and every error in the server logs given (counted),
# then the logs packed into $OUT/$1 (pack_logs).
log_report() {
  local archive=$1; shift
  # since session 61 also the extend warm-up's line and the slow results' kernel builds; since
  # session 64 the opt-in switch warm-up's (ADAPTIVE_SPEC_WARM_SWITCH=1)
  grep -h -i -E "full catch-up|plain off path|Traceback|Error|kernels warmed|kernels built in|switch warm-up" \
    "$@" \
    | grep -v -e openai_harmony -e "Responses API" | sort | uniq -c | head -20
  pack_logs "$archive" "$@"
}

# acceptance by drafting round since re-entry, the full catch-up's counts and the step modes of
# every server in the sweep JSONs given (rank 0)
reentry_table() {
  python3 - "$@" <<'PY'
import json, sys
for path in sys.argv[1:]:
    d = json.load(open(path))
    for row in d["rows"]:  # each level's decisions by reason and steps by mode (session 16 on)
        if row.get("decisions"):
            print(row["system"], row["concurrency"], row.get("repeat", ""), "decisions",
                  json.dumps(row["decisions"]), "modes", json.dumps(row.get("step_modes")))
            if row.get("decisions_steady"):  # session 17 on: the steady window alone
                print("   steady window: decisions", json.dumps(row["decisions_steady"]),
                      "modes", json.dumps(row.get("step_modes_steady")))
    for name, s in d["systems"].items():
        for rank in (s.get("final_status") or [])[:1]:
            r = rank.get("reentry") or {}
            print(name, "modes", json.dumps(rank.get("step_modes")), "full", json.dumps(r.get("full_catchup")))
            for k, row in (r.get("accept_len_by_round_since_reentry") or {}).items():
                print(" ", name, f"steps {k} accept length by round:", row["accept_len"], "request-rounds", row["request_rounds"])
PY
}

# After a call's sweeps: their tables ($3...: the sweeps' text files), the re-entry table, then
# log_report on the server logs into $OUT/$2; $1: the sweeps' name prefix.
report() {
  local prefix=$1 archive=$2; shift 2
  cat "$@" | grep -v "^\s*$" | tail -60
  reentry_table "$OUT"/sweep-"$prefix"*.json
  cpu_table "$OUT"/sweep-"$prefix"*.json
  log_report "$archive" /tmp/logs-"$prefix"*/*.log
}

# The same sweep on both GPUs at once, then their report: $1 the names' common prefix, $2 the log
# archive, $3 / $4 GPU 0's name suffix and draft dir, $5 / $6 GPU 1's, $7 the systems, rest: sweep
# flags. Each target is its draft dir's sibling `target`.
sweep_two() {
  local prefix=$1 archive=$2 n0=$1$3 d0=$4 n1=$1$5 d1=$6 systems=$7; shift 7
  sweep 0 "$n0" "${d0%/*}/target" "$d0" "$systems" "$@" > "/tmp/tail-$n0.txt" &
  sweep 1 "$n1" "${d1%/*}/target" "$d1" "$systems" "$@" > "/tmp/tail-$n1.txt"
  wait; report "$prefix" "$archive" "/tmp/tail-$n0.txt" "/tmp/tail-$n1.txt"
}

# Per level of the sweep JSONs given: throughput, mean running requests, median TTFT, the CPU
# each process used (client, the server's front-end, scheduler, detokenizer; session 17 on) and
# the client's event-loop lag: a CPU-bound client or front-end caps a level before the GPU does
cpu_table() {
  python3 - "$@" <<'PY'
import json, sys
for path in sys.argv[1:]:
    for r in json.load(open(path))["rows"]:
        cpu = " ".join(f"{k}={v:.2f}" for k, v in sorted((r.get("cpu_util") or {}).items()))
        print(f'{r["system"]:<28} {r["concurrency"]:>4} r{r.get("repeat", 0)} {r["output_tok_s"]:>8.0f} tok/s '
              f'running {r.get("mean_running")} ttft {r.get("ttft_ms_p50")} ms cpu {cpu} '
              f'lag p99 {r.get("client_loop_lag_ms_p99")} ms sched cpus {r.get("scheduler_cpus")} '
              f'{r.get("scheduler_cpu_mhz")} MHz')
PY
}

# The goodput server's final step-time table, prefill term and prefill batch fit, from the sweep
# JSONs given (rank 0's final status)
goodput_cost_model() {
  python3 - "$@" <<'PY'
import json, sys
for path in sys.argv[1:]:
    fs = json.load(open(path))["systems"]["adaptive-spec:goodput"].get("final_status") or [{}]
    cm = fs[0].get("cost_model") or {}
    for key in ("step_ms", "step_samples", "step_context_tokens", "prefill_ms_admitted_tokens_per_step",
                "prefill_batch_fit_ms", "prefill_launch_ms", "prefill_kind_ms",
                "prefill_kind_admitted", "prefill_kind_ratio", "prefill_waves", "switch_on_ms",
                "preferred_runs_ms", "choice_by_bucket", "threshold_suggestion", "realized_ratio",
                "model_parts_ms"):
        print(path.split("/")[-1], key, json.dumps(cm.get(key)))
    print(path.split("/")[-1], "switches", fs[0].get("switches"))
PY
}

# Our servers' step-time samples (goodput, forced on, forced off; an empty file for one not run)
# and goodput's last 300 decision lines from sweep $1's logs (/tmp/logs-$1-$2, $2 by default
# dense), into $OUT
keep_ours_logs() {
  local s logs=/tmp/logs-$1-${2:-dense}
  for s in goodput forced-on forced-off; do
    grep -h "adaptive_spec samples" "$logs/server-adaptive-spec_$s.log" \
      > "$OUT/samples-$1-$s.txt" 2> /dev/null
  done
  grep -h "adaptive_spec decision" "$logs/server-adaptive-spec_goodput.log" \
    | tail -300 > "$OUT/decisions-$1.log" 2> /dev/null
}

# Goodput's paired ratios in sweep JSON $1 against each of the rest (`--of` values: envelope,
# a system, or several joined by commas)
goodput_paired() {
  local file=$1 of; shift
  for of in "$@"; do
    ( cd /tmp && python3 -m adaptive_spec.bench.cli paired "$file" --system adaptive-spec:goodput \
        --of "$of" )
  done
}

# Plain, eagle3 (3 steps) and goodput on the dense pair (dial 0.7), 2 passes, the goodput server's
# step-time samples logged (ADAPTIVE_SPEC_SAMPLE_LOG=1) and summed up: $1 mode, $2 concurrencies,
# $3 / $4 two buckets whose samples are tabled. Session 38 (call_s38.sh be / be64), session 39.
sampled_goodput_sweep() {
  dense_pinned_setup $1
  export ADAPTIVE_SPEC_SAMPLE_LOG=1
  sweep 0 $1-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput --concurrency $2 --repeat 2 --time-budget-s 6 \
    --start-timeout-s 360 --system-args "$GOODPUT" > /tmp/tail-$1.txt
  grep -h "adaptive_spec samples" /tmp/logs-$1-dense/server-adaptive-spec_goodput.log \
    > "$OUT/samples-$1.txt"
  report $1- logs-$1.tar.xz /tmp/tail-$1.txt
  goodput_paired "$OUT"/sweep-$1-dense.json envelope
  ( cd /tmp && python3 -m adaptive_spec.bench.sample_summary --crossings "$OUT/samples-$1.txt"
    python3 -m adaptive_spec.bench.sample_summary --bucket $3 "$OUT/samples-$1.txt" | tail -20
    python3 -m adaptive_spec.bench.sample_summary --bucket $4 "$OUT/samples-$1.txt" | tail -20 )
  goodput_cost_model "$OUT"/sweep-$1-dense.json
}
