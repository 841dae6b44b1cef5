#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, prepared in session 5 (2026-11-29); a, b and c ran in session 6 (results
# 2026-11-30-s6-*), e as a 150-s variant (`call_s6.sh c` has the full one), d not yet:
# three back-to-back commands of ~9 min (the whole 30-min budget; a and b first).
#   a  the goodput timing fix (step times restart at each prefill's result; probe back-off) on
#      the dense pair where session 5 showed the sample starvation: GPU 0: dial 0.9, ours up
#      to 7 steps (0.64x / 0.86x of the envelope at 128 / 256 before the fix); GPU 1: dial 0.7
#      with the TPOT SLO (12 ms) beside plain, eagle3 and goodput (0.74x at 64 before).
#   b  GPU 0: the MoE dial-0.7 sweep again (four systems); GPU 1: issue 8's long run started
#      detached: 10 min of the soak load against the goodput policy on the dial-0.7 pair, with
#      a policy fault injected at decision 20000 (fallback drill), probes vs plain at both ends.
#   c  GPU 1: the soak collected; GPU 0: where the forced-off gap under continuous arrivals
#      goes (issue 3): plain vs forced off vs decode-lean vs direct (session 5's off step outside
#      SGLang's verify step, CPU-tested only: the sweep's token-for-token check is its first GPU
#      test) on the always-wrong pair at 1 and 64-256 requests, a 40-step profile at 256
#      summarised by phase (trace_summary's phases_ms: the draft's prefill, batch merge/filter,
#      result processing, the off step itself).
#   d  after a-c (another session): the DeepSeek-V3-layout target (MLA + MoE, issue 10;
#      `models --preset deepseek-v3 --layers 16`, CPU-built and CPU-loaded with SGLang's
#      DeepseekV3ForCausalLM so far, never served): GPU 0: dial 0.7, GPU 1: always-wrong, four
#      systems each. The first question is whether SGLang 0.5.16 serves it with Triton attention
#      and EAGLE-3 on this bundle; the server logs come back either way.
#   e  issue 9's switching soak at tensor parallel 2 (both GPUs): 5 minutes of the soak load
#      (step and bursty phases) against plain and goodput servers at --tp-size 2, greedy probes
#      vs plain at both ends, the two ranks' decision digests compared. One command, ~9 min.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s5.sh a|b|c|d|e
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-540}
case "${1:-}" in
a)
  build_two_pairs /tmp/dial-8b dial:0.9 /tmp/soak-8b random,dial:0.7 --preset 8b
  sweep 0 dial-0.9 /tmp/dial-8b/target /tmp/dial-8b/draft-dial-0.9 "$FOUR" \
    --system-steps adaptive-spec:goodput=7 &
  sweep 1 slo-dial-0.7 /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput,adaptive-spec:goodput-slo12 \
    --system-args "adaptive-spec:goodput-slo12=--adaptive-spec-policy goodput --adaptive-spec-tpot-slo-ms 12" &
  wait
  pack_logs logs-a.tar.xz /tmp/logs-dial-0.9/*.log /tmp/logs-slo-dial-0.7/*.log ;;
b)
  ( SOAK_GPU=1 SOAK_DIR=/tmp/soak-8b SOAK_S=600 FAULT=policy@20000 SOAK_POLICY="--adaptive-spec-policy goodput" \
      bash scripts/device/call_soak.sh start > /tmp/soak-start.txt 2>&1 ) &
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/moe-16 dial:0.7 --preset qwen3-moe --layers 16 ) || exit 3
  RUN_FLAGS+=(--start-timeout-s 360)
  sweep 0 moe-dial-0.7 /tmp/moe-16/target /tmp/moe-16/draft-dial-0.7 "$FOUR"
  wait; cat /tmp/soak-start.txt
  pack_logs logs-b.tar.xz /tmp/logs-moe-dial-0.7/*.log ;;
c)
  sweep 0 forced-off /tmp/soak-8b/target /tmp/soak-8b/draft-random \
    plain,adaptive-spec:forced-off,adaptive-spec:forced-off-lean,adaptive-spec:forced-off-direct \
    --concurrency 1,64,128,256 --time-budget-s 8 --time-budget-from 128:10 --profile-at 256 --profile-steps 40 \
    --system-args "adaptive-spec:forced-off-lean=--adaptive-spec-force off --adaptive-spec-off-path decode-lean" \
    --system-args "adaptive-spec:forced-off-direct=--adaptive-spec-force off --adaptive-spec-off-path direct" &
  SOAK_DIR=/tmp/soak-8b bash scripts/device/call_soak.sh collect
  wait
  pack_logs logs-c.tar.xz /tmp/logs-forced-off/*.log ;;
d)
  build_two_pairs /tmp/ds-16 dial:0.7 /tmp/ds-16r random --preset deepseek-v3 --layers 16
  RUN_FLAGS+=(--start-timeout-s 360)
  sweep 0 ds-dial-0.7 /tmp/ds-16/target /tmp/ds-16/draft-dial-0.7 "$FOUR" &
  sweep 1 ds-always-wrong /tmp/ds-16r/target /tmp/ds-16r/draft-random "$FOUR" &
  wait
  pack_logs logs-d.tar.xz /tmp/logs-ds-dial-0.7/*.log /tmp/logs-ds-always-wrong/*.log ;;
e)
  export SOAK_GPU=0,1 SOAK_TP=2 SOAK_DIR=/tmp/soak-8b DEADLINE_S=590
  SOAK_S=300 SOAK_POLICY="--adaptive-spec-policy goodput" bash scripts/device/call_soak.sh start || exit 3
  bash scripts/device/call_soak.sh collect ;;
*) echo "usage: call_s5.sh a|b|c|d|e"; exit 2 ;;
esac
rm -f "$OUT/build.log"
say "done $1"
