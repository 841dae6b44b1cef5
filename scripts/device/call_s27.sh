#!/usr/bin/env bash
# Session 27. One H200 each:
#   mc (~8 min) issue 10's stall, cleanly: ms ran the warm-up server beside the others, and the
#      three shared one kernel cache (the warm-up's builds served all three; no stall anywhere, the
#      slowest full catch-up 57 ms). Two sweeps, each on empty Triton and TVM-FFI caches: plain and
#      goodput, then plain and goodput with the extend warm-up, 2 pairs at 1 request (MoE layout,
#      always-wrong draft); per sweep the kernels built after the servers were ready, with their
#      times, beside the log's decode-batch gaps; the GPU's clocks sampled every 0.5 s throughout
#      (read-only: ms saw plain's own TPOT at 1.4 and 2.2 ms in different repeats).
#   mo (~9 min) issue 10 with the extend warm-up on by default (after mc): on empty kernel
#      caches, the MoE layout (16 layers), plain, eagle3, goodput at 1 / 4 / 16 requests, dial 0.7,
#      2 passes (session 26: goodput 0.872x / 1.020x / 1.077x of max(plain, eagle3)), then the
#      always-wrong draft, plain and goodput at 1 / 4, 2 passes, in what the deadline leaves.
#   mr (~9 min, prepared, not run: no device time left) mo again after the refresh change
#      (`0a3d0a4`: any k that could still win is refreshed; mo kept plain at 1 request while its
#      own table put k = 3 at 1.34x) and with the scheduler's CPU and clock in every row
#      (`scheduler_cpus`, `scheduler_cpu_mhz`): dial 0.7 at 1 / 4 / 16, 3 passes.
#   mp (~5 min) issue 10's low-N deficit while off (mo: goodput 0.886x / 0.616x of plain at 1
#      request, off on 2,943 / 2,359 of the level's decisions, TPOT p50 1.9 / 2.3 ms against plain's
#      1.4): the MoE layout with the always-wrong draft, plain and goodput at 1 request, 2 passes,
#      with the phase clocks (1-s windows): which scheduler phase of an off step costs more.
#   ms (~6 min) issue 10's stall at one request (sessions 16 and 26: a ~2-s stall at a k = 1
#      refresh's re-entry, 0.66x / 0.67x of plain): the MoE layout (16 layers) with the
#      always-wrong draft at 1 request, 3 pairs of plain, goodput, and goodput with the extend
#      warm-up (`--warmups adaptive_spec_extend`: one-token prefills of 15-4088 tokens before the
#      server listens). Then every slow full catch-up the servers logged, with its target / draft
#      split, and the Triton and TVM-FFI kernels built while the sweep ran (the caches' new
#      entries, with their times, against the log's stall): whether the stall is a kernel build.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s27.sh mc|mo|mr|mp|ms
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
WARM="adaptive-spec:goodput-warm=--adaptive-spec-policy goodput --warmups adaptive_spec_extend"
# kernels built after $1 (a marker file) in the JIT caches, oldest first, with their times
built_since() {
  find "$TRITON_CACHE_DIR" "$TVM_FFI_CACHE_DIR" -newer "$1" -type f \( -name '*.json' -o -name '*.so' \) \
    ! -name '__grp__*' -printf '%TT %P\n' 2>/dev/null | sort | cut -c1-8,20- | head -${2:-60}
}
# the servers' first "fired up" time in the logs $1/*.log, as a file's mtime ($2)
ready_marker() {
  local t; t=$(grep -h "fired up" "$1"/*.log 2>/dev/null | sed -n 's/^\[\([0-9-]* [0-9:]*\)\].*/\1/p' | sort | tail -1)
  [ -n "$t" ] && touch -d "$t" "$2"
}
# decode-batch lines more than $2 s apart in the server logs $1/*.log: where a server stalled
gaps() {
  local f; for f in "$1"/*.log; do
    grep "Decode batch" "$f" | sed -n 's/^\[[0-9-]* \([0-9:]*\)\].*/\1/p' | awk -v g="$2" -v n="$(basename "$f")" \
      '{split($1,a,":"); t=a[1]*3600+a[2]*60+a[3]; if (p && t-p>=g && t-p<5) print n, "gap", t-p, "s before", $1; p=t}'
  done | head -20
}
case "${1:-}" in
mc)
  export DEADLINE_S=${DEADLINE_S:-575} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/moe-16 random --preset qwen3-moe --layers 16 || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_event_reasons.active \
    --format=csv,noheader -lms 500 > "$OUT/gpu-clocks.csv" 2>/dev/null &
  SMI=$!
  RUN_FLAGS+=(--start-timeout-s 300)
  for v in cold warm; do
    export TRITON_CACHE_DIR=/tmp/jit-$v/triton TVM_FFI_CACHE_DIR=/tmp/jit-$v/tvm-ffi
    rm -rf /tmp/jit-$v; mkdir -p "$TRITON_CACHE_DIR" "$TVM_FFI_CACHE_DIR"
    sys=adaptive-spec:goodput; [ $v = warm ] && sys=adaptive-spec:goodput-warm
    sweep 0 mc-$v /tmp/moe-16/target /tmp/moe-16/draft-random plain,$sys --concurrency 1 --repeat 2 \
      --time-budget-s 6 --system-args "$GOODPUT" --system-args "$WARM" > /tmp/tail-mc-$v.txt
    grep -H "full catch-up of\|extend kernels warmed\|fired up" /tmp/logs-mc-$v/*.log | sed 's|/tmp/logs-mc-[a-z]*/||' | cut -c1-220
    ready_marker /tmp/logs-mc-$v /tmp/ready-mc-$v && { say "$v: kernels built after the servers were ready:"; built_since /tmp/ready-mc-$v 40; }
    gaps /tmp/logs-mc-$v 2
    say "$v done; $(left) s left"
  done
  kill $SMI 2>/dev/null
  report mc- logs-mc.tar.xz /tmp/tail-mc-cold.txt /tmp/tail-mc-warm.txt
  ;;
mo)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  export TRITON_CACHE_DIR=/tmp/jit-mo/triton TVM_FFI_CACHE_DIR=/tmp/jit-mo/tvm-ffi
  rm -rf /tmp/jit-mo; mkdir -p "$TRITON_CACHE_DIR" "$TVM_FFI_CACHE_DIR"
  build_pair /tmp/moe-16 dial:0.7,random --preset qwen3-moe --layers 16 || { tail -30 "$OUT/build.log"; exit 3; }
  say "models built"
  RUN_FLAGS+=(--start-timeout-s 360)
  sweep 0 moe-low-dial-0.7 /tmp/moe-16/target /tmp/moe-16/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput --concurrency 1,4,16 --repeat 2 --time-budget-s 6 \
    --system-args "$GOODPUT" > /tmp/tail-m7.txt
  say "dial 0.7 done; $(left) s left"
  sweep 0 moe-low-random /tmp/moe-16/target /tmp/moe-16/draft-random \
    plain,adaptive-spec:goodput --concurrency 1,4 --repeat 2 --time-budget-s 6 \
    --system-args "$GOODPUT" > /tmp/tail-mr.txt
  grep -H "full catch-up of\|extend kernels warmed" /tmp/logs-moe-low-*/*.log | sed 's|/tmp/logs-||' | cut -c1-200
  report moe-low- logs-mo.tar.xz /tmp/tail-m7.txt /tmp/tail-mr.txt
  ;;
mr)
  export DEADLINE_S=${DEADLINE_S:-570} ADAPTIVE_SPEC_WARM_SAMPLING=0
  export TRITON_CACHE_DIR=/tmp/jit-mr/triton TVM_FFI_CACHE_DIR=/tmp/jit-mr/tvm-ffi
  rm -rf /tmp/jit-mr; mkdir -p "$TRITON_CACHE_DIR" "$TVM_FFI_CACHE_DIR"
  build_pair /tmp/moe-16 dial:0.7 --preset qwen3-moe --layers 16 || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  RUN_FLAGS+=(--start-timeout-s 360)
  sweep 0 mr-moe-dial-0.7 /tmp/moe-16/target /tmp/moe-16/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput --concurrency 1,4,16 --repeat 3 --time-budget-s 6 \
    --system-args "$GOODPUT" > /tmp/tail-mr.txt
  report mr- logs-mr.tar.xz /tmp/tail-mr.txt
  goodput_cost_model "$OUT"/sweep-mr-moe-dial-0.7.json
  ;;
mp)
  export DEADLINE_S=${DEADLINE_S:-300} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_PHASE_TIMING=1 \
    ADAPTIVE_SPEC_PHASE_WINDOW_S=1
  build_pair /tmp/moe-16 random --preset qwen3-moe --layers 16 || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  RUN_FLAGS+=(--start-timeout-s 200)
  sweep 0 mp-moe-random /tmp/moe-16/target /tmp/moe-16/draft-random plain,adaptive-spec:goodput \
    --concurrency 1 --repeat 2 --time-budget-s 6 --system-args "$GOODPUT" > /tmp/tail-mp.txt
  report mp- logs-mp.tar.xz /tmp/tail-mp.txt
  phases /tmp/logs-mp-moe-random --bands 1-1 | tail -14
  ;;
ms)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/moe-16 random --preset qwen3-moe --layers 16 || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  RUN_FLAGS+=(--start-timeout-s 360)
  touch /tmp/marker-ms
  sweep 0 ms-moe-random /tmp/moe-16/target /tmp/moe-16/draft-random \
    plain,adaptive-spec:goodput,adaptive-spec:goodput-warm --concurrency 1 --repeat 3 --time-budget-s 6 \
    --system-args "$GOODPUT" --system-args "$WARM" > /tmp/tail-ms.txt
  report ms- logs-ms.tar.xz /tmp/tail-ms.txt
  grep -H "full catch-up of\|extend kernels warmed\|Running warmup\|Warmup ended" /tmp/logs-ms-moe-random/*.log \
    | sed 's|/tmp/logs-ms-moe-random/||' | cut -c1-260 | head -30
  python3 - "$OUT"/sweep-ms-moe-random.json <<'PY'
import json, sys
for name, s in json.load(open(sys.argv[1]))["systems"].items():
    for rank in (s.get("final_status") or [])[:1]:
        print(name, "full catch-up", json.dumps((rank.get("reentry") or {}).get("full_catchup")))
PY
  say "kernels built during the sweep (cache time, entry):"
  built_since /tmp/marker-ms 80 | tee "$OUT/built-ms.txt"
  ;;
*)
  say "usage: $0 mc|mo|mr|mp|ms"; exit 2
  ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
