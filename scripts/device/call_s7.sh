#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, written in session 7 (2026-11-30). Each call ends with its results
# under $OUT; issue the next right after (the machine is released after 30 s idle).
#   a  RUN in session 7 (2.5 min): the sync probe (ADAPTIVE_SPEC_SYNC_PROBE=1) on plain and
#      forced-off-lean (GPU 0) and eagle3 and forced-off-direct (GPU 1) at 1 and 64 requests:
#      zero host-device syncs in every server (results/2026-11-30-s7-syncs.txt).
#   b  (~7 min) forced off (lean, direct) vs plain at 64 and 256, 3 paired repeats, phase clocks.
#      A first version ran in session 7 with a 195-s deadline and measured nothing.
#   c  (~5 min) the sawtooth lossless check of issue 8 (goodput vs plain, every output compared)
#      on GPU 0; GPU 1: --disable-overlap-schedule with flapping and forced off (issue 3).
#   d  (~9 min) the DeepSeek-V3 layout at 64-256: goodput with the lean and the old off path.
#   e  (~5 min) our verify kernels in the server vs SGLang's (greedy GPU 0, top-p GPU 1).
#   f  (~9 min) always-wrong drafts on both MoE layouts, the four systems (issue 10).
# Also still to run: call_s6.sh d (the TP = 2 sweep), e (step load + dense always-wrong), f
# (the kernel grid with the session-7 sampling launch).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s7.sh a|b|c|d|e|f
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-330}
LEAN="--adaptive-spec-off-path decode-lean"
case "${1:-}" in
a)
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/al-8b aligned --preset 8b ) || exit 3
  export ADAPTIVE_SPEC_SYNC_PROBE=1 ADAPTIVE_SPEC_WARM_SAMPLING=0
  PROBE=(--concurrency 1,64 --time-budget-s 6)
  sweep 0 sync-off /tmp/al-8b/target /tmp/al-8b/draft-aligned plain,adaptive-spec:forced-off-lean "${PROBE[@]}" \
    --system-args "adaptive-spec:forced-off-lean=--adaptive-spec-force off $LEAN" > /tmp/sweep0.txt &
  sweep 1 sync-spec /tmp/al-8b/target /tmp/al-8b/draft-aligned eagle3,adaptive-spec:forced-off-direct "${PROBE[@]}" \
    --system-args "adaptive-spec:forced-off-direct=--adaptive-spec-force off --adaptive-spec-off-path direct" > /tmp/sweep1.txt
  wait; cat /tmp/sweep0.txt /tmp/sweep1.txt
  for f in /tmp/logs-sync-off/server-*.log /tmp/logs-sync-spec/server-*.log; do
    echo "== $(basename "$f"): $(grep -c "called a synchronizing" "$f") unhandled sync warnings in the log"
    grep -h "adaptive_spec syncs" "$f" | tail -4
  done > "$OUT/syncs.txt"
  cut -c1-3000 "$OUT/syncs.txt"
  pack_logs logs-sync.tar.xz /tmp/logs-sync-off/*.log /tmp/logs-sync-spec/*.log ;;
b)
  # (~7 min) the off paths head to head where they matter, measured so that a 2% difference
  # shows: plain and forced off with lean (the default) and direct at 64 and 256 requests,
  # each level 3 times in a row (--repeat: systems rotated, each ratio paired with plain's in
  # the same repeat, mean +- 95% over repeats), phase clocks on every server (direct's were
  # never taken). Session 7 ran a 3-server version with a 195-s deadline: no level fit.
  export DEADLINE_S=440
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/al-8b aligned --preset 8b ) || exit 3
  ( export ADAPTIVE_SPEC_PHASE_TIMING=1
    sweep 0 off-paths-busy /tmp/al-8b/target /tmp/al-8b/draft-aligned \
      plain,adaptive-spec:forced-off-lean,adaptive-spec:forced-off-direct \
      --concurrency 64,256 --repeat 3 --time-budget-s 8 --time-budget-from 128:8 \
      --system-args "adaptive-spec:forced-off-lean=--adaptive-spec-force off" \
      --system-args "adaptive-spec:forced-off-direct=--adaptive-spec-force off --adaptive-spec-off-path direct" )
  phases /tmp/logs-off-paths-busy
  pack_logs logs-b.tar.xz /tmp/logs-off-paths-busy/*.log ;;
c)
  # (~4 min) issue 8's lossless check as asked: the real policy (goodput, lean off path) under
  # a sawtooth load 1 -> 128 (10-s period, 60 s), every greedy output vs plain's, token for token
  # Session 8's first run: both sweeps out of time (300 s; FlashInfer sampling warm-up took
  # 77-91 s per server) and every no-overlap adaptive server crashed at its first off step
  # (int32 bonus tokens; fixed). Greedy only, so the sampling warm-up is skipped.
  export DEADLINE_S=430 ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/soak-8b random,dial:0.7 --preset 8b ) || exit 3
  pattern_load 0 sawtooth /tmp/soak-8b --period-s 10 --duration-s 60 --sample-interval-s 0.5 \
    > /tmp/sweep-c0.txt &
  # GPU 1 meanwhile: issue 3's other scheduler, never run on the GPU: --disable-overlap-schedule
  # for every server; flapping every 8 steps and forced off vs plain and eagle3, token for token
  sweep 1 no-overlap /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:flap8,adaptive-spec:forced-off --concurrency 1,16,64 --time-budget-s 6 \
    --server-arg=--disable-overlap-schedule \
    --system-args "adaptive-spec:flap8=--adaptive-spec-force flap:8" \
    --system-args "adaptive-spec:forced-off=--adaptive-spec-force off" > /tmp/sweep-c1.txt
  wait; cat /tmp/sweep-c0.txt /tmp/sweep-c1.txt
  pack_logs logs-c.tar.xz /tmp/logs-sawtooth/*.log /tmp/logs-no-overlap/*.log ;;
d)
  # (~8 min) the DeepSeek-V3 layout at 128 and 256 requests, where session 7's goodput made
  # 0.75x / 0.86x with the old `decode` off path: plain, eagle3, goodput with the lean default
  # and with `decode`, phase clocks on every server (the off step's host time on MLA + MoE)
  export DEADLINE_S=560
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/ds-16 dial:0.7 --preset deepseek-v3 --layers 16 ) || exit 3
  RUN_FLAGS+=(--start-timeout-s 360)
  ( export ADAPTIVE_SPEC_PHASE_TIMING=1
    sweep 0 ds-busy /tmp/ds-16/target /tmp/ds-16/draft-dial-0.7 \
      plain,eagle3,adaptive-spec:goodput,adaptive-spec:goodput-decode --concurrency 64,128,256 \
      --system-args "adaptive-spec:goodput-decode=--adaptive-spec-policy goodput --adaptive-spec-off-path decode --adaptive-spec-log-decisions" )
  phases /tmp/logs-ds-busy
  pack_logs logs-d.tar.xz /tmp/logs-ds-busy/*.log ;;
e)
  # (~5 min) issue 6's end-to-end check, never run: our chain-verify kernels inside the server
  # (--adaptive-spec-verify-backend triton) vs SGLang's verify, drafting forced on, same run.
  # GPU 0 greedy (outputs vs plain, token for token), GPU 1 temperature 0.7 + top-p 0.9.
  export DEADLINE_S=330
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/soak-8b random,dial:0.7 --preset 8b ) || exit 3
  VERIFY=(--concurrency 1,16,64 --time-budget-s 6
    --system-args "adaptive-spec:on-sglang=--adaptive-spec-force on"
    --system-args "adaptive-spec:on-triton=--adaptive-spec-force on --adaptive-spec-verify-backend triton")
  sweep 0 verify-e2e-greedy /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,adaptive-spec:on-sglang,adaptive-spec:on-triton "${VERIFY[@]}" > /tmp/sweep-e0.txt &
  sweep 1 verify-e2e-top-p /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    adaptive-spec:on-sglang,adaptive-spec:on-triton "${VERIFY[@]}" --temperature 0.7 --top-p 0.9 \
    > /tmp/sweep-e1.txt
  wait; cat /tmp/sweep-e0.txt /tmp/sweep-e1.txt
  pack_logs logs-e.tar.xz /tmp/logs-verify-e2e-greedy/*.log /tmp/logs-verify-e2e-top-p/*.log ;;
f)
  # (~9 min) issue 10's always-wrong sweeps, never run on the MoE testbeds: the four systems on
  # the Qwen3-MoE layout (GPU 0) and the DeepSeek-V3 layout (GPU 1), both 16 layers, random draft
  export DEADLINE_S=560
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/moe-16 random --preset qwen3-moe --layers 16 ) & p0=$!
  ( export CUDA_VISIBLE_DEVICES=1; build_pair /tmp/ds-16 random --preset deepseek-v3 --layers 16 ) & p1=$!
  { wait $p0 && wait $p1; } || exit 3
  RUN_FLAGS+=(--start-timeout-s 360)
  sweep 0 moe-always-wrong /tmp/moe-16/target /tmp/moe-16/draft-random "$FOUR" > /tmp/sweep-f0.txt &
  sweep 1 ds-always-wrong /tmp/ds-16/target /tmp/ds-16/draft-random "$FOUR" > /tmp/sweep-f1.txt
  wait; cat /tmp/sweep-f0.txt /tmp/sweep-f1.txt
  pack_logs logs-f.tar.xz /tmp/logs-moe-always-wrong/*.log /tmp/logs-ds-always-wrong/*.log ;;
*) echo "usage: call_s7.sh a|b|c|d|e|f"; exit 2 ;;
esac
rm -f "$OUT/build.log"
say "done $1"
