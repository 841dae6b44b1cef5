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
#      request of session 6 was a reused connection the server was closing; and FlashInfer's
#      sampling kernels now built at start: session 6's first top-p request took 87 s).
#   b  GPU 0: the DeepSeek-V3-layout target (MLA + MoE, issue 10; 16 layers; never served yet):
#      plain, eagle3, builtin-adaptive, goodput at dial 0.7. The first question is whether
#      SGLang 0.5.16 serves it with Triton attention and EAGLE-3 from this bundle; the server
#      logs come back either way. GPU 1: still the soak (ends ~3 min into b).
#   c  the soak collected, then issue 9's switching soak at tensor parallel 2 over both GPUs:
#      5 minutes of load (session 6 ran 2.5), probes vs plain at both ends, ranks compared.
#   d, e  for a later session (~9 min each): d the TP = 2 sweep (plain, eagle3, goodput) with
#      the ranks compared; e the step load 1 -> 128 -> 1 (GPU 0) and the always-wrong sweep of
#      the four systems (GPU 1), both with the current goodput rules; f the chain-verify
#      kernels vs SGLang's verify with a launch sweep (~5 min, GPU 0).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s6.sh a|b|c|d|e|f
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-540}
LEAN="--adaptive-spec-off-path decode-lean"
case "${1:-}" in
a)
  build_two_pairs /tmp/al-8b aligned /tmp/soak-8b random,dial:0.7 --preset 8b
  ( SOAK_GPU=1 SOAK_DIR=/tmp/soak-8b SOAK_S=600 SOAK_POLICY="--adaptive-spec-policy goodput $LEAN" \
      bash scripts/device/call_soak.sh start > /tmp/soak-start.txt 2>&1 ) &
  # greedy-only sweep: FlashInfer's sampling JIT (built at start since session 6) is left to
  # the soak's server, which sends top-p requests (its first-use timing is the test)
  ( export ADAPTIVE_SPEC_PHASE_TIMING=1 ADAPTIVE_SPEC_WARM_SAMPLING=0
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
d)
  # later session: issue 9's same-run sweep at --tp-size 2 with the current rules (session 3's
  # was 0.56-0.92x of the envelope except 1.14x at 4, with older rules), ranks compared
  build_pair /tmp/soak-8b random,dial:0.7 --preset 8b || exit 3
  export ADAPTIVE_SPEC_RANK_CHECK_EVERY=512 NCCL_NVLS_ENABLE=0
  sweep 0,1 tp2-dial-0.7 /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 plain,eagle3,adaptive-spec:goodput \
    --server-arg "--tp-size 2"
  python3 scripts/device/rank_check.py /tmp/logs-tp2-dial-0.7/server-adaptive-spec_goodput.log | tee "$OUT/rank-check.txt"
  pack_logs logs-d.tar.xz /tmp/logs-tp2-dial-0.7/*.log ;;
e)
  # later session: issue 5's step load 1 -> 128 -> 1 with the current rules (GPU 0; last run in
  # session 3) and the always-wrong sweep of the four systems (GPU 1)
  build_two_pairs /tmp/soak-8b random,dial:0.7 /tmp/wrong-8b random --preset 8b
  step_load /tmp/soak-8b &
  sweep 1 always-wrong /tmp/wrong-8b/target /tmp/wrong-8b/draft-random "$FOUR"
  wait
  pack_logs logs-e.tar.xz /tmp/logs-step/*.log /tmp/logs-always-wrong/*.log ;;
f)
  # later session, ~5 min on GPU 0: issue 6's kernels vs SGLang's verify at the sizes that matter
  # plus the launch sweep (more programs per SM), the kernels' JIT inside the budget
  ( cd /tmp && CUDA_VISIBLE_DEVICES=0 python3 "$REPO/benchmarks/kernel_bench.py" --bs 1,64,256 --k 3,7 \
      --vocab 128256 --budget-s 280 --out "$OUT/kernels.json" ) 2>&1 | tail -30 ;;
*) echo "usage: call_s6.sh a|b|c|d|e|f"; exit 2 ;;
esac
rm -f "$OUT/build.log"
say "done $1"
