#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, session 18 (2026-11-30). After call_s17.sh p2 (goodput with the
# prefill term's steady-load rule at 64 / 128 / 256, both pairs):
#   t3 (~9 min) issue 3's tables on the current threshold policy (floor + re-probe backoff):
#      GPU 0 the always-right pair: plain, eagle3, threshold at 1 / 16 / 64 / 128 / 256, 2 paired
#      repeats, with the threshold at 96 running requests (EAGLE-3 beat plain at 64 and lost at
#      128-256 with this pair, session 15; the default 32 is the dial-0.7 pair's crossover).
#      GPU 1: forced on against EAGLE-3 at 1 / 16 (always-right, 3 pairs), then the always-wrong
#      pair: plain and threshold at 64 / 128 / 256 (2 pairs; 1-16 were met in session 17).
#   t2 (~8 min) issue 9's same-run sweep at --tp-size 2 in 2 paired repeats (session 15 ran one
#      pass): plain, eagle3, goodput at 1 / 16 / 64 / 128 / 256 on the dial-0.7 pair, with the
#      goodput table's larger-batch cap (p2: a plain step at 33-64 requests read 8.95 ms, at
#      65-128 6.73); lossless vs plain, the two ranks' decision digests compared.
#   fo (~3 min; prepared, NOT run: the session had 238 device seconds left, too few to start a
#      machine) t3 found the threshold policy, off for
#      low acceptance at 64 requests, at 0.936x / 0.881x of plain (TPOT 11.4-11.7 vs 9.9-10.4
#      ms): forced off against plain at 64 requests, 2 pairs on each GPU (the always-wrong pair
#      on GPU 0, dial 0.7 on GPU 1), 5-s windows.
#   cx (~9 min; prepared, NOT run) the crossover band on one GPU with the larger-batch cap and the
#      hopeless-refresh limit (both after p2; t2 ran them at TP = 2 only): plain, eagle3, goodput
#      at 32 / 64 / 128, 3 pairs, 8-s windows; GPU 0 the dense pair, GPU 1 the MoE layout (dial
#      0.7 both). p2 had goodput at 0.93x at 64 on the dense pair, on a table whose plain step at
#      33-64 requests read 8.95 ms against 6.73 at 65-128.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s18.sh t3|t2|fo|cx
source scripts/device/common.sh

THRESHOLD_96="adaptive-spec:threshold=--adaptive-spec-threshold 96"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
case "${1:-}" in
t3)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/al-8b aligned --preset 8b ) & p0=$!
  ( export CUDA_VISIBLE_DEVICES=1; build_pair /tmp/al-8b-1 aligned --preset 8b \
      && build_pair /tmp/rw-8b random --preset 8b ) & p1=$!
  { wait $p0 && wait $p1; } || { tail -30 "$OUT/build.log"; exit 3; }
  say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
  sweep 0 t3-aligned /tmp/al-8b/target /tmp/al-8b/draft-aligned plain,eagle3,adaptive-spec:threshold \
    --concurrency 1,16,64,128,256 --repeat 2 --time-budget-s 5 --time-budget-from 128:6,256:6 \
    --system-args "$THRESHOLD_96" > /tmp/tail-t3-aligned.txt &
  sweep 1 t3-forced-on /tmp/al-8b-1/target /tmp/al-8b-1/draft-aligned eagle3,adaptive-spec:forced-on \
    --concurrency 1,16 --repeat 3 --time-budget-s 5 > /tmp/tail-t3-forced-on.txt
  sweep 1 t3-random /tmp/rw-8b/target /tmp/rw-8b/draft-random plain,adaptive-spec:threshold \
    --concurrency 64,128,256 --repeat 2 --time-budget-s 5 --time-budget-from 128:6,256:6 \
    --system-args "$THRESHOLD_96" > /tmp/tail-t3-random.txt
  wait
  report t3- logs-t3.tar.xz /tmp/tail-t3-aligned.txt /tmp/tail-t3-forced-on.txt /tmp/tail-t3-random.txt
  ;;
t2)
  export DEADLINE_S=${DEADLINE_S:-550} ADAPTIVE_SPEC_RANK_CHECK_EVERY=512 NCCL_NVLS_ENABLE=0 ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/soak-8b dial:0.7 --preset 8b ) || exit 3
  say "model built (code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown})"
  sweep 0,1 tp2-paired /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput --server-arg "--tp-size 2" --concurrency 1,16,64,128,256 \
    --repeat 2 --time-budget-s 5 --time-budget-from 128:6,256:6 --system-args "$GOODPUT"
  reentry_table "$OUT"/sweep-tp2-paired.json
  for f in /tmp/logs-tp2-paired/server-adaptive-spec_*.log; do python3 "$REPO/scripts/device/rank_check.py" "$f"; done
  log_report logs-t2.tar.xz /tmp/logs-tp2-paired/*.log ;;
fo)
  export DEADLINE_S=${DEADLINE_S:-170} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_two_pairs /tmp/rw-8b random /tmp/soak-8b dial:0.7 --preset 8b
  say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
  sweep_two fo- logs-fo.tar.xz random /tmp/rw-8b/draft-random dial-0.7 /tmp/soak-8b/draft-dial-0.7 \
    plain,adaptive-spec:forced-off --concurrency 64 --repeat 2 --time-budget-s 5 --warmup-tokens 64 ;;
cx)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/soak-8b dial:0.7 --preset 8b ) & p0=$!
  ( export CUDA_VISIBLE_DEVICES=1; build_pair /tmp/moe-16 dial:0.7 --preset qwen3-moe --layers 16 ) & p1=$!
  { wait $p0 && wait $p1; } || { tail -30 "$OUT/build.log"; exit 3; }
  say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
  RUN_FLAGS+=(--start-timeout-s 300)
  sweep_two cx- logs-cx.tar.xz dense /tmp/soak-8b/draft-dial-0.7 moe /tmp/moe-16/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput --concurrency 32,64,128 --repeat 3 --time-budget-s 8 \
    --time-budget-from 128:8 --system-args "$GOODPUT"
  goodput_cost_model "$OUT"/sweep-cx-*.json
  ;;
*) echo "usage: call_s18.sh t3|t2|fo|cx"; exit 2 ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
say "done $1"
