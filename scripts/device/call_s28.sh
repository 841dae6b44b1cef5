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
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s28.sh bx
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
*)
  say "usage: $0 bx"; exit 2
  ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
