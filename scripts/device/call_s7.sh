#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, session 7 (2026-11-30), after call_s6.sh a, b, c and f:
#   a  (~4 min) where the off step waits for the GPU. Session 7's phase clocks put our
#      forced-off-lean step at 52 requests +1.9 ms in run_batch and -1.0 ms in process_decode
#      against plain (net +1.2 ms a step, 0.84x): the signature of a host-device sync inside the
#      forward. Every server here runs with the sync probe (ADAPTIVE_SPEC_SYNC_PROBE=1: torch's
#      sync debug mode, each sync counted by site and scheduler phase) at 1 and 64 requests:
#      GPU 0 plain and forced-off-lean, GPU 1 eagle3 and forced-off-direct (which skips
#      SGLang's verify step: a site it shares with lean is outside the verify). Throughput
#      numbers of this call are not performance data (a stack walk per sync).
# Still to run (call_s6.sh): d the TP = 2 sweep, e the step load and the always-wrong sweep.
#   b  (~7 min) forced off (lean, direct) vs plain at 64 and 256, 3 paired repeats, phase clocks.
#   c  (~4 min) the sawtooth lossless check of issue 8 (goodput vs plain, every output compared).
#   d  (~8 min) the DeepSeek-V3 layout at 64-256: goodput with the lean and the old off path.
#   e  (~5 min) our verify kernels in the server vs SGLang's (greedy GPU 0, top-p GPU 1).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s7.sh a|b|c|d|e
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
  ( cd /tmp && python3 -m adaptive_spec.bench.phase_summary /tmp/logs-off-paths-busy/server-*.log ) \
    | tee "$OUT/phases-off-paths-busy.txt"
  pack_logs logs-b.tar.xz /tmp/logs-off-paths-busy/*.log ;;
c)
  # (~4 min) issue 8's lossless check as asked: the real policy (goodput, lean off path) under
  # a sawtooth load 1 -> 128 (10-s period, 60 s), every greedy output vs plain's, token for token
  export DEADLINE_S=300
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/soak-8b random,dial:0.7 --preset 8b ) || exit 3
  ( cd /tmp && CUDA_VISIBLE_DEVICES=0 python3 -m adaptive_spec.bench.cli sweep --pattern sawtooth \
      --pattern-low 1 --pattern-high 128 --period-s 10 --duration-s 60 --new-tokens 192 \
      --prompt-len 40,128 --new-tokens-spread 0.5 --temperature 0 --drain-s 2 --start-stagger-s 10 \
      --sample-interval-s 0.5 --deadline-s $(( $(left) - 20 )) --quiet \
      --server-arg "--max-running-requests 260" --server-arg=--enable-metrics \
      --system-args "adaptive-spec:goodput+=--adaptive-spec-log-decisions" \
      --target /tmp/soak-8b/target --draft /tmp/soak-8b/draft-dial-0.7 --name sawtooth-dial-0.7 \
      --systems plain,adaptive-spec:goodput --log-dir /tmp/logs-sawtooth \
      --out "$OUT/sweep-sawtooth-dial-0.7.json" > /tmp/sweep-sawtooth.txt 2>&1 )
  tail -12 /tmp/sweep-sawtooth.txt
  pack_logs logs-c.tar.xz /tmp/logs-sawtooth/*.log ;;
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
  ( cd /tmp && python3 -m adaptive_spec.bench.phase_summary /tmp/logs-ds-busy/server-*.log ) | tee "$OUT/phases-ds-busy.txt"
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
*) echo "usage: call_s7.sh a|b|c|d|e"; exit 2 ;;
esac
rm -f "$OUT/build.log"
say "done $1"
