#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, prepared in session 6 (2026-11-30) for the next session, NOT YET RUN:
# three back-to-back commands of ~9 min (the whole 30-min budget); issue each right after the
# previous one (the machine is given back after 30 s idle, and b and c need what a left there).
#   a  GPU 0: the lean off step under switching before it becomes the default off path
#      (measured faster or equal to `decode` in 9 of 14 forced-off cells, lossless, sessions 5-6):
#      plain, eagle3 and ours forced to flap every step / every 8 steps with `decode-lean`, and
#      forced off with it, on the always-right pair at 1, 16 and 64 requests (outputs vs plain,
#      token for token; the flapping rows' accept length vs eagle3's). Every server of this sweep
#      (plain too) runs with the phase clocks (ADAPTIVE_SPEC_PHASE_TIMING=1): wall ms per decode
#      step by scheduler phase and level, plain vs forced-off-lean at 64 requests: where the
#      off step's 0.83-0.86x under continuous arrivals goes (issue 3), without the profiler.
#      GPU 1: issue 8's long run started detached: 10 min of the soak load against goodput with
#      the lean off path (the client's keep-alive fix of session 6 in place: the one failed
#      request of session 6 was a reused connection the server was closing).
#   b  GPU 0: the DeepSeek-V3-layout target (MLA + MoE, issue 10; 16 layers; never served yet):
#      plain, eagle3, builtin-adaptive, goodput at dial 0.7. The first question is whether
#      SGLang 0.5.16 serves it with Triton attention and EAGLE-3 from this bundle; the server
#      logs come back either way. GPU 1: still the soak (ends ~3 min into b).
#   c  the soak collected, then issue 9's switching soak at tensor parallel 2 over both GPUs:
#      5 minutes of load (session 6 ran 2.5), probes vs plain at both ends, ranks compared.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s6.sh a|b|c
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-540}
LEAN="--adaptive-spec-off-path decode-lean"
# The phase clocks' table (ms of wall time per decode step by scheduler phase, every server,
# plain included: ADAPTIVE_SPEC_PHASE_TIMING) of the sweep logs in $1, as text and JSON.
phases() {
  local name; name=$(basename "$1")
  python3 -m adaptive_spec.bench.phase_summary --json "$OUT/phases-${name#logs-}.json" "$1"/server-*.log \
    | tee "$OUT/phases-${name#logs-}.txt"
}
case "${1:-}" in
a)
  build_two_pairs /tmp/al-8b aligned /tmp/soak-8b random,dial:0.7 --preset 8b
  ( SOAK_GPU=1 SOAK_DIR=/tmp/soak-8b SOAK_S=600 SOAK_POLICY="--adaptive-spec-policy goodput $LEAN" \
      bash scripts/device/call_soak.sh start > /tmp/soak-start.txt 2>&1 ) &
  ( export ADAPTIVE_SPEC_PHASE_TIMING=1
    sweep 0 lean-flapping /tmp/al-8b/target /tmp/al-8b/draft-aligned \
      plain,eagle3,adaptive-spec:flap1-lean,adaptive-spec:flap8-lean,adaptive-spec:forced-off-lean \
      --concurrency 1,16,64 --time-budget-s 8 \
      --system-args "adaptive-spec:flap1-lean=--adaptive-spec-force flap:1 $LEAN" \
      --system-args "adaptive-spec:flap8-lean=--adaptive-spec-force flap:8 $LEAN" \
      --system-args "adaptive-spec:forced-off-lean=--adaptive-spec-force off $LEAN" )
  wait; cat /tmp/soak-start.txt
  phases /tmp/logs-lean-flapping
  pack_logs logs-a.tar.xz /tmp/logs-lean-flapping/*.log ;;
b)
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/ds-16 dial:0.7 --preset deepseek-v3 --layers 16 ) || exit 3
  RUN_FLAGS+=(--start-timeout-s 360)
  ( export ADAPTIVE_SPEC_PHASE_TIMING=1; sweep 0 ds-dial-0.7 /tmp/ds-16/target /tmp/ds-16/draft-dial-0.7 "$FOUR" )
  phases /tmp/logs-ds-dial-0.7
  pack_logs logs-b.tar.xz /tmp/logs-ds-dial-0.7/*.log ;;
c)
  export DEADLINE_S=590  # collect (~1 min) + TP start (~2 min) + 5 min of load + probes
  SOAK_DIR=/tmp/soak-8b bash scripts/device/call_soak.sh collect
  mv "$OUT/soak.json" "$OUT/soak-10min.json" 2>/dev/null; mv "$OUT/ours-excerpt.log" "$OUT/soak-10min-ours.log" 2>/dev/null
  export SOAK_GPU=0,1 SOAK_TP=2 SOAK_DIR=/tmp/soak-8b
  SOAK_S=300 SOAK_POLICY="--adaptive-spec-policy goodput" bash scripts/device/call_soak.sh start || exit 3
  bash scripts/device/call_soak.sh collect ;;
*) echo "usage: call_s6.sh a|b|c"; exit 2 ;;
esac
rm -f "$OUT/build.log"
say "done $1"
