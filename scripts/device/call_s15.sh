#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, session 15 (2026-11-30). Session 15 ran call_s14.sh op first (commit
# aa8929e; results 2026-11-30-s15-off-prefill-*), then:
#   fc (~8 min) `--adaptive-spec-catchup full` (new this session, catchup.py): at re-entry the
#      target and the draft re-run over every stale position, then the step drafts at once.
#      With ADAPTIVE_SPEC_CATCHUP_CHECK=1 (the host's lengths checked against the GPU's at every
#      full catch-up). Both GPUs the always-right pair, 1 / 16 / 64 requests, lossless vs plain,
#      acceptance by drafting round since re-entry from each server's status:
#      GPU 0 plain, eagle3, flapping every 8 steps (SGLang's catch-up), the same with full;
#      GPU 1 plain, flapping every step with full (every drafting step is a re-entry), flapping
#      every 64 steps with plain prefills while off (prompts admitted then have no draft KV),
#      the same with full.
#   nd (~8 min) the defaults of the code it travels with (the host's lengths checked at every full
#      catch-up), five levels 1 / 16 / 64 / 128 / 256:
#      GPU 0 the always-right pair: plain, eagle3, threshold (the default policy), goodput (issue
#      3's threshold table, issue 5's envelope); GPU 1 dial 0.7: plain, eagle3, SGLang's built-in
#      adaptive mode, goodput (issue 5's 2x at 128 / 256 and envelope).
#   t2 (~7 min, both GPUs) issue 9's same-run TP = 2 sweep on the defaults (plain prefills while
#      off and the full catch-up at TP = 2 for the first time): plain, eagle3, goodput at
#      1 / 16 / 64 / 128 / 256, dial 0.7; lossless vs plain; the two ranks' decision digests
#      compared (rank_check.py); lengths checked at every full catch-up.
# Prepared for the next session, not run (each on the defaults of the code it travels with):
#   th (~8 min) issue 3's threshold table with the acceptance floor: plain, eagle3, threshold,
#      flapping every 8 steps (default catch-up); GPU 0 always-wrong draft, GPU 1 dial 0.5;
#      1 / 16 / 64 / 128 / 256.
#   gp (~9 min) issue 5's envelope in paired repeats where one pass cannot tell (16-128):
#      plain, eagle3, goodput, 3 repeats, longer levels at 64 / 128 (a 128-request level held
#      about one request lifetime in session 15); GPU 0 dial 0.7, GPU 1 always-right; the
#      phase clocks on (wall ms per decode step by scheduler phase, every server).
#   moe (~9 min) issue 10 on the defaults: the Qwen3-MoE layout (16 layers), plain, eagle3,
#      SGLang's built-in adaptive mode, goodput at 1 / 4 / 16 / 64 / 128 / 256 (widened in
#      session 16 to issue 10's table); GPU 0 dial 0.7, GPU 1 random draft.
# Session 16 ran th, moe and gp as written here (the sweeps' rows now carry each level's
# decisions by reason and steps by mode).
# (fc and nd ran with their report steps written out; `report` in common.sh does the same steps.)
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s15.sh fc|nd|t2|th|gp|moe
source scripts/device/common.sh

case "${1:-}" in
fc)
  export DEADLINE_S=${DEADLINE_S:-500} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_CATCHUP_CHECK=1
  build_two_pairs /tmp/al-8b aligned /tmp/al-8b-1 aligned --preset 8b
  say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
  FULL="--adaptive-spec-catchup full"; PP="--adaptive-spec-off-prefill plain"
  sweep 0 catchup-flap8 /tmp/al-8b/target /tmp/al-8b/draft-aligned \
    plain,eagle3,adaptive-spec:flap8,adaptive-spec:flap8-full --concurrency 1,16,64 \
    --system-args "adaptive-spec:flap8=--adaptive-spec-force flap:8" \
    --system-args "adaptive-spec:flap8-full=--adaptive-spec-force flap:8 $FULL" > /tmp/sweep-fc0.txt &
  sweep 1 catchup-prompts /tmp/al-8b-1/target /tmp/al-8b-1/draft-aligned \
    plain,adaptive-spec:flap1-full,adaptive-spec:flap64-pp,adaptive-spec:flap64-pp-full --concurrency 1,16,64 \
    --system-args "adaptive-spec:flap1-full=--adaptive-spec-force flap:1 $FULL" \
    --system-args "adaptive-spec:flap64-pp=--adaptive-spec-force flap:64 $PP" \
    --system-args "adaptive-spec:flap64-pp-full=--adaptive-spec-force flap:64 $PP $FULL" > /tmp/sweep-fc1.txt
  wait; report catchup- logs-fc.tar.xz /tmp/sweep-fc0.txt /tmp/sweep-fc1.txt ;;
nd)
  export DEADLINE_S=${DEADLINE_S:-480} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_CATCHUP_CHECK=1
  build_two_pairs /tmp/al-8b aligned /tmp/soak-8b dial:0.7 --preset 8b
  say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
  GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
  sweep 0 defaults-aligned /tmp/al-8b/target /tmp/al-8b/draft-aligned \
    plain,eagle3,adaptive-spec:threshold,adaptive-spec:goodput --concurrency 1,16,64,128,256 \
    --system-args "$GOODPUT" > /tmp/sweep-nd0.txt &
  sweep 1 defaults-dial-0.7 /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,builtin-adaptive,adaptive-spec:goodput --concurrency 1,16,64,128,256 \
    --system-args "$GOODPUT" > /tmp/sweep-nd1.txt
  wait; report defaults- logs-nd.tar.xz /tmp/sweep-nd0.txt /tmp/sweep-nd1.txt ;;
t2)
  export DEADLINE_S=${DEADLINE_S:-420} ADAPTIVE_SPEC_RANK_CHECK_EVERY=512 NCCL_NVLS_ENABLE=0 ADAPTIVE_SPEC_CATCHUP_CHECK=1
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/soak-8b dial:0.7 --preset 8b ) || exit 3
  say "model built (code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown})"
  sweep 0,1 tp2-defaults /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput --server-arg "--tp-size 2" --concurrency 1,16,64,128,256 \
    --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput"
  reentry_table "$OUT"/sweep-tp2-defaults.json
  for f in /tmp/logs-tp2-defaults/server-adaptive-spec_*.log; do python3 "$REPO/scripts/device/rank_check.py" "$f"; done
  log_report logs-t2.tar.xz /tmp/logs-tp2-defaults/*.log ;;
th)
  export DEADLINE_S=${DEADLINE_S:-540} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_two_pairs /tmp/rw-8b random /tmp/d5-8b dial:0.5 --preset 8b
  say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
  for g in 0 1; do
    name=$([ $g = 0 ] && echo threshold-random || echo threshold-dial-0.5)
    dir=$([ $g = 0 ] && echo /tmp/rw-8b/draft-random || echo /tmp/d5-8b/draft-dial-0.5)
    sweep $g "$name" "${dir%/*}/target" "$dir" plain,eagle3,adaptive-spec:threshold,adaptive-spec:flap8 \
      --concurrency 1,16,64,128,256 --system-args "adaptive-spec:flap8=--adaptive-spec-force flap:8" \
      > "/tmp/sweep-th$g.txt" &
  done
  wait; report threshold- logs-th.tar.xz /tmp/sweep-th0.txt /tmp/sweep-th1.txt ;;
gp)
  # phase clocks in every server (session 16): where a level's time goes outside decode steps
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_PHASE_TIMING=1
  build_two_pairs /tmp/soak-8b dial:0.7 /tmp/al-8b aligned --preset 8b
  say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
  sweep 0 paired-dial-0.7 /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 plain,eagle3,adaptive-spec:goodput \
    --concurrency 16,64,128 --repeat 3 --time-budget-s 6 --time-budget-from 64:8,128:12 \
    --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput" > /tmp/sweep-gp0.txt &
  sweep 1 paired-aligned /tmp/al-8b/target /tmp/al-8b/draft-aligned plain,eagle3,adaptive-spec:goodput \
    --concurrency 16,64,128 --repeat 3 --time-budget-s 6 --time-budget-from 64:8,128:12 \
    --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput" > /tmp/sweep-gp1.txt
  wait; report paired- logs-gp.tar.xz /tmp/sweep-gp0.txt /tmp/sweep-gp1.txt
  phases /tmp/logs-paired-dial-0.7; phases /tmp/logs-paired-aligned ;;
moe)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_two_pairs /tmp/moe-16 dial:0.7 /tmp/moe-16r random --preset qwen3-moe --layers 16
  say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
  RUN_FLAGS+=(--start-timeout-s 360)
  for g in 0 1; do
    name=$([ $g = 0 ] && echo moe-dial-0.7 || echo moe-random)
    dir=$([ $g = 0 ] && echo /tmp/moe-16/draft-dial-0.7 || echo /tmp/moe-16r/draft-random)
    sweep $g "$name" "${dir%/*}/target" "$dir" plain,eagle3,builtin-adaptive,adaptive-spec:goodput \
      --concurrency 1,4,16,64,128,256 --time-budget-s 6 --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput" > "/tmp/sweep-moe$g.txt" &
  done
  wait; report moe- logs-moe.tar.xz /tmp/sweep-moe0.txt /tmp/sweep-moe1.txt ;;
*) echo "usage: call_s15.sh fc|nd|t2|th|gp|moe"; exit 2 ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
say "done $1"
