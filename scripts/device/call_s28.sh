#!/usr/bin/env bash
# Session 28. One H200 each:
#   bx (~8 min) issue 5 at high load after the refresh change (`0a3d0a4`, not yet run on the dense
#      pair): dense 8B pair, dial 0.7, plain, eagle3, SGLang's built-in adaptive mode and goodput
#      at 256 / 128 requests, 2 passes where the deadline lets them (session 26, one pass: goodput
#      0.78x / 0.92x of plain, 1.69x / 1.92x the built-in), with the phase clocks (1-s windows):
#      whether goodput's off steps at 160-256 running cost plain's (session 24: 17.14 vs 17.04 ms)
#      or the deficit lies elsewhere (re-entries, prefills).
#   bx again (run 2, after `9f042aa`): the same sweep with drafting samples over the plausible
#      bound trimmed with the rest instead of dropped (run 1's first 256-request level probed k = 2
#      and 3 for 21 steps at ~6x a plain one); two more pairs for the built-in ratio.
#   ad (~8 min, prepared, not run: no device time left) issue 5's 256 deficit: bx found goodput's
#      off steps at 160-256 running no dearer than plain's, yet fewer windows there and a TTFT
#      p50 of 0.38-0.88 s in all four 256 levels (plain: 2 of 4, EAGLE-3: none). Dense dial 0.7,
#      plain, eagle3 and goodput at 256, 3 passes, phase clocks with the admission queue and
#      SGLang's new-token ratio in every window (`mean_waiting`, `new_token_ratio`), then the
#      bands 160-256 / 96-159: whether requests wait in the queue, and at which ratio.
#   mq (~9 min, prepared, not run) issue 10 after the drafting refresh (`9056696`): the MoE
#      layout, dial 0.7, plain, eagle3 and goodput at 4 / 16 requests, 3 passes, empty caches
#      (session 28 `mr`: k = 2 ran a whole 16-request level while k = 3 read 14% better).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s28.sh bx|ad|mq
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
case "${1:-}" in
bx)
  export DEADLINE_S=${DEADLINE_S:-570} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_PHASE_TIMING=1 \
    ADAPTIVE_SPEC_PHASE_WINDOW_S=1
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  RUN_FLAGS+=(--start-timeout-s 200)
  sweep 0 bx-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 "$FOUR" --concurrency 256,128 \
    --repeat 2 --time-budget-s 6 --system-args "$GOODPUT" > /tmp/tail-bx.txt
  report bx- logs-bx.tar.xz /tmp/tail-bx.txt
  phases /tmp/logs-bx-dense --bands 160-256,96-159 | tail -10
  goodput_cost_model "$OUT"/sweep-bx-dense.json
  ;;
ad)
  export DEADLINE_S=${DEADLINE_S:-570} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_PHASE_TIMING=1 \
    ADAPTIVE_SPEC_PHASE_WINDOW_S=1
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  RUN_FLAGS+=(--start-timeout-s 200)
  sweep 0 ad-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 plain,eagle3,adaptive-spec:goodput \
    --concurrency 256 --repeat 3 --time-budget-s 6 --system-args "$GOODPUT" > /tmp/tail-ad.txt
  report ad- logs-ad.tar.xz /tmp/tail-ad.txt
  phases /tmp/logs-ad-dense --bands 160-256,96-159 | tail -8
  ;;
mq)
  export DEADLINE_S=${DEADLINE_S:-570} ADAPTIVE_SPEC_WARM_SAMPLING=0
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
  say "usage: $0 bx|ad|mq"; exit 2
  ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
