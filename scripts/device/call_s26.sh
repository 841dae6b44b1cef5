#!/usr/bin/env bash
# Session 26. One H200 each:
#   sl (~5 min) issue 5's step load 1 -> 128 -> 1 (plain, goodput, dial 0.7) with the follow
#      record, after goodput learned to run a k that a larger batch bounds (session 21: 12
#      decisions of plain at 2 running on the way down, a size class the ramps had skipped);
#      then, in what the deadline leaves, issue 5's crossover band (dense dial 0.7: EAGLE-3 and
#      plain within 15% at 32-64 requests; session 13's one run: goodput 1.05x there, mostly
#      k = 2): plain, eagle3, goodput at 32 / 64, 2 passes.
#   bx (~9 min) issue 5's ">= 2x SGLang's built-in adaptive mode at 128 / 256" (session 15, one
#      pass: 1.90x / 2.15x; not re-run since): plain, built-in, goodput at 256 / 128, dial 0.7,
#      BX_REPEAT passes (2); the sweep's deadline drops what does not fit.
#   mo (~8 min) issue 10 on one GPU: the Qwen3-MoE layout (16 layers), plain, eagle3, goodput at
#      1 / 4 / 16 requests (session 16's one pass: goodput 0.94x / 0.94x / 1.11x of the better),
#      dial 0.7 in 2 passes, then the always-wrong draft in what the deadline leaves.
#   ph (~3 min) what the session's last device minutes hold: bx's 256-request level (goodput
#      0.78x of plain there while off on every steady decision, ITL p50 25.5 vs 14.5 ms, p99 649
#      ms) again, plain and goodput, one pass, with the phase clocks (1-s windows) and the full
#      catch-up's host time in the status. Session 26: no server started (start timeout 106 s, the
#      deadline's share on a cold machine: the cold servers need more); needs DEADLINE_S >= 300.
#   ms (~6 min, prepared, not run) issue 10's stall at one request: the MoE layout with the
#      always-wrong draft, plain and goodput at 1 request, 3 pairs, then every slow full catch-up
#      the servers logged (SLOW_CATCHUP_S) and goodput's catch-up host times: whether the ~2-s
#      re-entry stalls of sessions 16 and 26 are the catch-up's host work (a kernel build).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s26.sh sl|bx|mo|ph|ms
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
case "${1:-}" in
sl)
  export DEADLINE_S=${DEADLINE_S:-570} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  step_load_follow /tmp/soak-8b logs-sl.tar.xz
  say "step load done; $(left) s left"
  if (( $(left) > 200 )); then
    sweep 0 xo-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
      plain,eagle3,adaptive-spec:goodput --concurrency 32,64 --repeat 2 --time-budget-s 6 \
      --system-args "$GOODPUT" > /tmp/tail-xo.txt
    report xo- logs-xo.tar.xz /tmp/tail-xo.txt
  fi
  ;;
bx)
  export DEADLINE_S=${DEADLINE_S:-565} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  sweep 0 bx-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,builtin-adaptive,adaptive-spec:goodput --concurrency 256,128 --repeat ${BX_REPEAT:-2} \
    --time-budget-s 6 --system-args "$GOODPUT" > /tmp/tail-bx.txt
  report bx- logs-bx.tar.xz /tmp/tail-bx.txt
  ;;
mo)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/moe-16 dial:0.7,random --preset qwen3-moe --layers 16 || { tail -30 "$OUT/build.log"; exit 3; }
  say "models built"
  RUN_FLAGS+=(--start-timeout-s 360)
  sweep 0 moe-low-dial-0.7 /tmp/moe-16/target /tmp/moe-16/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput --concurrency 1,4,16 --repeat 2 --time-budget-s 6 \
    --system-args "$GOODPUT" > /tmp/tail-m7.txt
  sweep 0 moe-low-random /tmp/moe-16/target /tmp/moe-16/draft-random \
    plain,adaptive-spec:goodput --concurrency 1,4,16 --time-budget-s 6 \
    --system-args "$GOODPUT" > /tmp/tail-mr.txt
  report moe-low- logs-mo.tar.xz /tmp/tail-m7.txt /tmp/tail-mr.txt
  ;;
ph)
  export DEADLINE_S=${DEADLINE_S:-200} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_PHASE_TIMING=1 \
    ADAPTIVE_SPEC_PHASE_WINDOW_S=1
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  sweep 0 ph-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 plain,adaptive-spec:goodput \
    --concurrency 256 --time-budget-s 8 --system-args "$GOODPUT" > /tmp/tail-ph.txt
  report ph- logs-ph.tar.xz /tmp/tail-ph.txt
  phases /tmp/logs-ph-dense --bands 160-256,96-159 | tail -8
  ;;
ms)
  export DEADLINE_S=${DEADLINE_S:-400} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/moe-16 random --preset qwen3-moe --layers 16 || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  RUN_FLAGS+=(--start-timeout-s 360)
  sweep 0 ms-moe-random /tmp/moe-16/target /tmp/moe-16/draft-random plain,adaptive-spec:goodput \
    --concurrency 1 --repeat 3 --time-budget-s 6 --system-args "$GOODPUT" > /tmp/tail-ms.txt
  report ms- logs-ms.tar.xz /tmp/tail-ms.txt
  grep -h "full catch-up of" /tmp/logs-ms-moe-random/*.log | head -20
  python3 - "$OUT"/sweep-ms-moe-random.json <<'PY'
import json, sys
for rank in json.load(open(sys.argv[1]))["systems"]["adaptive-spec:goodput"].get("final_status") or []:
    print("full catch-up", json.dumps((rank.get("reentry") or {}).get("full_catchup")))
PY
  ;;
*)
  say "usage: $0 sl|bx|mo|ph|ms"; exit 2
  ;;
esac
# at most 8 files come back: session 26's sl lost its crossover JSON to that cap
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
