#!/usr/bin/env bash
# Session 31. One H200 each:
#   mq (~7 min) issue 10 after the smaller-batch cap (`3f85c1e`, CPU-tested only; session 30's
#      start of it was refused): the MoE layout, dial 0.7, plain, eagle3 and goodput at 4 / 16
#      requests, 3 passes, empty caches (session 29: r0 at 4 requests ran plain on 2,307 of
#      2,328 decisions, 0.853x).
#   fb (~8 min) issue 5 at 128 / 256 with the HTTP front-end relieved (`--stream-interval 4` on
#      every server; session 30's `fo` had every front-end at 0.77-0.95 of a core and plain at
#      the same ~10.6k tok/s in all three repeats): plain, eagle3, SGLang's built-in adaptive
#      and goodput, dense 8B pair, dial 0.7, 3 passes: goodput against max(plain, eagle3) and
#      against the built-in mode (>= 2x asked) where the front-end no longer caps every server.
#   fc (~8 min) fb again after the sweep's level end (`end_level`): fb showed the built-in
#      server still decoding 48-59 cut-off requests of its 128-request level, at 28-45 ms a
#      step, inside goodput's level (the turn order rotates, so goodput always followed it); now
#      each level's leftovers are aborted and waited out before the next level, of any server.
#   fr (~4 min, the session's last device time) the bounded neighbour refresh (`2173378`,
#      CPU-tested): goodput alone at 128 requests, dense pair, dial 0.7, --stream-interval 4,
#      3 passes: its decisions (fc refreshed k = 1 in 2 of 3 levels); no plain, so no ratio
#      and no lossless check.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s31.sh mq|fb|fc|fr
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
case "${1:-}" in
mq)  # session 30's mq, which that session could not start
  DEADLINE_S=${DEADLINE_S:-540} exec bash "$REPO/scripts/device/call_s30.sh" mq
  ;;
fb|fc)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_PHASE_TIMING=1 \
    ADAPTIVE_SPEC_PHASE_WINDOW_S=1
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  RUN_FLAGS+=(--start-timeout-s 200 --server-arg "--stream-interval 4")
  sweep 0 $1-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 "$FOUR" \
    --concurrency 128,256 --repeat 3 --time-budget-s 6 --system-args "$GOODPUT" > /tmp/tail-$1.txt
  report $1- logs-$1.tar.xz /tmp/tail-$1.txt
  phases /tmp/logs-$1-dense --bands 160-256,96-159 | tail -10
  goodput_cost_model "$OUT"/sweep-$1-dense.json
  python3 -c "import json,sys; [print(r['system'], r['concurrency'], r.get('repeat'), r.get('left_at_cutoff')) for r in json.load(open(sys.argv[1]))['rows']]" "$OUT"/sweep-$1-dense.json
  ;;
fr)
  export DEADLINE_S=${DEADLINE_S:-230} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  RUN_FLAGS+=(--start-timeout-s 150 --server-arg "--stream-interval 4")
  sweep 0 fr-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 adaptive-spec:goodput \
    --concurrency 128 --repeat 3 --time-budget-s 6 --system-args "$GOODPUT" > /tmp/tail-fr.txt
  report fr- logs-fr.tar.xz /tmp/tail-fr.txt
  goodput_cost_model "$OUT"/sweep-fr-dense.json
  ;;
*)
  say "usage: $0 mq|fb|fc|fr"; exit 2
  ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
