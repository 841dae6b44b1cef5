#!/usr/bin/env bash
# GPU machine nvidia-h200-x2. Session 16 (2026-11-30) ran call_s15.sh th, moe and gp. Prepared
# here for the next session, not run (each on the defaults of the code it travels with; the
# sweeps' rows carry each level's decisions by reason and steps by mode):
#   fl (~8 min) the threshold policy's acceptance floor as fixed in session 16 (recent accept
#      length per request-round, off only when its upper bound is under the floor): plain, eagle3, threshold at
#      1 / 4 / 16 requests, 3 paired repeats; GPU 0 dial 0.5 (session 16: off for 91% of the
#      1-request level, 0.76x of eagle3), GPU 1 always-wrong (the floor must still hold there).
#   g2 (~9 min) issue 5 where session 16's 6 pairs left a gap (0.956x +-0.070 at 128) and where
#      no paired run exists (256): plain, eagle3, goodput at 128 / 256, 3 repeats, 12-s windows,
#      the phase clocks on; GPU 0 dial 0.7, GPU 1 always-right.
#   mp (~9 min) issue 10's >= 0.98x on the MoE layout in paired repeats: plain, eagle3, goodput
#      at 1 / 4 / 16 / 64, 3 repeats; GPU 0 dial 0.7, GPU 1 random draft.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s16.sh fl|g2|mp
source scripts/device/common.sh

GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
case "${1:-}" in
fl)
  export DEADLINE_S=${DEADLINE_S:-540} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_two_pairs /tmp/d5-8b dial:0.5 /tmp/rw-8b random --preset 8b
  say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
  sweep_two floor- logs-fl.tar.xz dial-0.5 /tmp/d5-8b/draft-dial-0.5 random /tmp/rw-8b/draft-random \
    plain,eagle3,adaptive-spec:threshold --concurrency 1,4,16 --repeat 3 --time-budget-s 6 ;;
g2)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_PHASE_TIMING=1
  build_two_pairs /tmp/soak-8b dial:0.7 /tmp/al-8b aligned --preset 8b
  say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
  sweep_two busy- logs-g2.tar.xz dial-0.7 /tmp/soak-8b/draft-dial-0.7 aligned /tmp/al-8b/draft-aligned \
    plain,eagle3,adaptive-spec:goodput --concurrency 128,256 --repeat 3 --time-budget-s 12 \
    --time-budget-from 256:12 --system-args "$GOODPUT"
  phases /tmp/logs-busy-dial-0.7; phases /tmp/logs-busy-aligned ;;
mp)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_two_pairs /tmp/moe-16 dial:0.7 /tmp/moe-16r random --preset qwen3-moe --layers 16
  say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
  RUN_FLAGS+=(--start-timeout-s 360)
  sweep_two moe-paired- logs-mp.tar.xz dial-0.7 /tmp/moe-16/draft-dial-0.7 random /tmp/moe-16r/draft-random \
    plain,eagle3,adaptive-spec:goodput --concurrency 1,4,16,64 --repeat 3 --time-budget-s 6 \
    --system-args "$GOODPUT" ;;
*) echo "usage: call_s16.sh fl|g2|mp"; exit 2 ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
say "done $1"
