#!/usr/bin/env bash
# Session 22 (kg, sv prepared in session 21; pw, aw in 22). One H200 each unless named:
#   kg (~8 min) issue 6's whole kernel grid on the current kernels: B = 1 / 16 / 64 / 256,
#      k = 1 / 3 / 7, V = 32,000 / 128,256 / 163,840, greedy and sampling, our kernels launched
#      both ways in the same process (--direct: session 21's host profile read 151.7 us a top-p
#      call through the JIT and 126.5 launched directly), CUDA-graph GPU time, the distribution
#      check: "never slower at any point of the grid" and the 3x / 2x at B = 64, k = 3.
#   sv (~7 min) issue 5's TPOT SLO on the current goodput code (last run in session 5-6):
#      plain, eagle3, goodput, goodput with --adaptive-spec-tpot-slo-ms 12 at 1 / 16 / 64 / 128,
#      dial 0.7, one pass, 6-s windows.
#   pw (~7 min) issue 5's dial-0.9 cells again after session 22's prefill rule (a prefill that
#      takes the batch into a size class where the policy runs plain skips the draft; probes
#      pause the off run): plain, eagle3, goodput at 64 / 256, 3 paired repeats. Session 21:
#      0.916x of the better mean at 256 with no plain prefill in one repeat.
#   aw (~4 min) the always-wrong draft at 64 requests, plain and goodput, 4 paired repeats
#      (session 20: 0.955x pooled over 5 pairs; goodput re-probes k = 1 there).
#   ph (~5 min) the phase clocks at 128 requests, dial 0.7: plain, forced off, goodput, 2 paired
#      repeats (this session's cx: goodput 0.920x of plain at 128 and 0.922x at 64 while off on
#      every steady step, its prefills plain).
#   tw (~2 min) a diagnostic: the plain server at 256 requests (dial-0.9 pair) with four tokenizer
#      workers (--tokenizer-worker-num 4), 2 repeats, against pw's plain there (one front-end
#      process at 0.88-0.96 of a core, 136-193 of 256 requests running).
#   Also prepared: call_s20.sh td (nvidia-h200-x2, issue 9's TP = 2 diagnosis) and call_s16.sh mp
#   (issue 10's MoE layout at 1-64 in 3 paired repeats, two GPUs: run on x2 when lent).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s22.sh kg|sv|pw|aw|ph|tw
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
case "${1:-}" in
kg)
  export DEADLINE_S=${DEADLINE_S:-570}
  ( cd /tmp && timeout 540 python3 "$REPO/benchmarks/kernel_bench.py" --no-tune --graph-timing \
      --direct --budget-s 500 --out "$OUT/kernels-grid.json" 2>&1 \
      | grep -E "rror|wrote|warm-up|done" | tail -40 )
  ;;
sv)
  export DEADLINE_S=${DEADLINE_S:-450} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  sweep 0 slo-dial-0.7 /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput,adaptive-spec:goodput-slo12 --concurrency 1,16,64,128 \
    --time-budget-s 6 --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput" \
    --system-args "adaptive-spec:goodput-slo12=--adaptive-spec-policy goodput --adaptive-spec-tpot-slo-ms 12" \
    > /tmp/tail-sv.txt
  report slo- logs-sv.tar.xz /tmp/tail-sv.txt
  ;;
pw)
  export DEADLINE_S=${DEADLINE_S:-575} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/dial-8b dial:0.9 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  sweep 0 pw-dial /tmp/dial-8b/target /tmp/dial-8b/draft-dial-0.9 plain,eagle3,adaptive-spec:goodput \
    --concurrency 64,256 --repeat 3 --time-budget-s 5 --time-budget-from 256:6 \
    --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput" > /tmp/tail-pw.txt
  report pw- logs-pw.tar.xz /tmp/tail-pw.txt
  goodput_cost_model "$OUT"/sweep-pw-dial.json
  ;;
aw)
  export DEADLINE_S=${DEADLINE_S:-420} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/rw-8b random --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  sweep 0 aw-random /tmp/rw-8b/target /tmp/rw-8b/draft-random plain,adaptive-spec:goodput \
    --concurrency 64 --repeat 4 --time-budget-s 6 \
    --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput" > /tmp/tail-aw.txt
  report aw- logs-aw.tar.xz /tmp/tail-aw.txt
  ;;
ph)
  export DEADLINE_S=${DEADLINE_S:-330} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_PHASE_TIMING=1
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  sweep 0 ph-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,adaptive-spec:forced-off,adaptive-spec:goodput --concurrency 128 --repeat 2 \
    --time-budget-s 6 --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput" \
    --system-args "adaptive-spec:forced-off=--adaptive-spec-force off" > /tmp/tail-ph.txt
  report ph- logs-ph.tar.xz /tmp/tail-ph.txt
  phases /tmp/logs-ph-dense
  rm -f "$OUT"/phases-*.json  # the text holds the same; only results-schema JSONs are committed
  ;;
tw)
  export DEADLINE_S=${DEADLINE_S:-160} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/dial-8b dial:0.9 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  sweep 0 tw-dial /tmp/dial-8b/target /tmp/dial-8b/draft-dial-0.9 plain --concurrency 256 \
    --repeat 2 --time-budget-s 5 --time-budget-from 256:6 \
    --server-arg "--tokenizer-worker-num 4" > /tmp/tail-tw.txt
  report tw- logs-tw.tar.xz /tmp/tail-tw.txt
  ;;
*) echo "usage: call_s22.sh kg|sv|pw|aw|ph|tw"; exit 2 ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
say "done $1"
