#!/usr/bin/env bash
# Session 30. One H200 each:
#   fo (~5 min) issue 5's 256 deficit: in session 29's `si` goodput ran plain on every steady
#      decision but one 7-step refresh, yet made 0.885 / 0.700 of plain, its steps at 160-256
#      running 23.1 against 17.7 ms. Dense 8B pair, dial 0.7, plain, drafting forced off and
#      goodput at 256 requests, 3 passes, phase clocks (1-s windows): whether the off path
#      itself costs at 256 (forced off against plain; sessions 15-24: 1.007x +-0.073) or only
#      goodput's choices do (goodput against forced off).
#   fs (~5 min) fo with every server on `--stream-interval 4` (the front-end relieved: fo's three
#      servers had it at 0.77-0.95 of a core, TTFT p50 0.13-1.0 s; session 29's `si` ran plain and
#      goodput only): forced off against plain, goodput against forced off, 3 passes.
#   mq (~6 min) issue 10 after the smaller-batch cap (`3f85c1e`, CPU-tested only): the MoE
#      layout, dial 0.7, plain, eagle3 and goodput at 4 / 16 requests, 3 passes, empty caches
#      (session 29: r0 at 4 requests ran plain on 2,307 of 2,328 decisions, 0.853x).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s30.sh fo|fs|mq
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
FORCED_OFF="adaptive-spec:forced-off=--adaptive-spec-force off"
case "${1:-}" in
fo)
  export DEADLINE_S=${DEADLINE_S:-450} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_PHASE_TIMING=1 \
    ADAPTIVE_SPEC_PHASE_WINDOW_S=1
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  RUN_FLAGS+=(--start-timeout-s 200)
  sweep 0 fo-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,adaptive-spec:forced-off,adaptive-spec:goodput --concurrency 256 --repeat 3 \
    --time-budget-s 6 --system-args "$GOODPUT" --system-args "$FORCED_OFF" > /tmp/tail-fo.txt
  report fo- logs-fo.tar.xz /tmp/tail-fo.txt
  phases /tmp/logs-fo-dense --bands 160-256,96-159 | tail -8
  goodput_cost_model "$OUT"/sweep-fo-dense.json
  ;;
fs)
  export DEADLINE_S=${DEADLINE_S:-450} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_PHASE_TIMING=1 \
    ADAPTIVE_SPEC_PHASE_WINDOW_S=1
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  RUN_FLAGS+=(--start-timeout-s 200 --server-arg "--stream-interval 4")
  sweep 0 fs-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,adaptive-spec:forced-off,adaptive-spec:goodput --concurrency 256 --repeat 3 \
    --time-budget-s 6 --system-args "$GOODPUT" --system-args "$FORCED_OFF" > /tmp/tail-fs.txt
  report fs- logs-fs.tar.xz /tmp/tail-fs.txt
  phases /tmp/logs-fs-dense --bands 160-256,96-159 | tail -8
  goodput_cost_model "$OUT"/sweep-fs-dense.json
  ;;
mq)
  export DEADLINE_S=${DEADLINE_S:-500} ADAPTIVE_SPEC_WARM_SAMPLING=0
  export TRITON_CACHE_DIR=/tmp/jit-mq/triton TVM_FFI_CACHE_DIR=/tmp/jit-mq/tvm-ffi
  rm -rf /tmp/jit-mq; mkdir -p "$TRITON_CACHE_DIR" "$TVM_FFI_CACHE_DIR"
  build_pair /tmp/moe-16 dial:0.7 --preset qwen3-moe --layers 16 || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  RUN_FLAGS+=(--start-timeout-s 360)
  sweep 0 mq-moe-dial-0.7 /tmp/moe-16/target /tmp/moe-16/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput --concurrency 4,16 --repeat 3 --time-budget-s 6 \
    --system-args "$GOODPUT" > /tmp/tail-mq.txt
  report mq- logs-mq.tar.xz /tmp/tail-mq.txt
  goodput_cost_model "$OUT"/sweep-mq-moe-dial-0.7.json
  ;;
*)
  say "usage: $0 fo|fs|mq"; exit 2
  ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
