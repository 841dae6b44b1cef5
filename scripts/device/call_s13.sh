#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, session 13 (2026-11-30). Session 13 ran call_s12.sh g (its fifth
# server did not fit on one GPU), t, and a (rewritten in session 13: the four-server goodput
# table with the plain off path, and the plain-kv A/B on the MoE layout); then this:
#   r  (~6 min) the off path plain with plain KV release (the defaults when it ran, commit
#      1bf09c0; plain KV went back to reserve after the MoE A/B of call a) in the four-way table: GPU 0, dense dial 0.7: plain, eagle3, goodput, and flapping every 8 steps
#      (transitions under release, lossless vs plain), 1 / 16 / 64 / 128 / 256; GPU 1, the
#      Qwen3-MoE layout (16 layers, random draft: always wrong), plain, eagle3, goodput at
#      1 / 4 / 16 / 64 (issue 10's cell: session 12 read 0.87-0.96x with reserve).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s13.sh r
source scripts/device/common.sh
case "${1:-}" in
r)
  export DEADLINE_S=${DEADLINE_S:-470} ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/soak-8b dial:0.7 --preset 8b ) & p0=$!
  ( export CUDA_VISIBLE_DEVICES=1; build_pair /tmp/moe-16 random --preset qwen3-moe --layers 16 ) & p1=$!
  { wait $p0 && wait $p1; } || { tail -30 "$OUT/build.log"; exit 3; }
  say "models built (code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown})"
  DEFAULTS="--adaptive-spec-off-path plain --adaptive-spec-plain-kv release"  # ran as the defaults; since then plain-kv is reserve again
  sweep 0 defaults-dial-0.7 /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput,adaptive-spec:flap8 --concurrency 1,16,64,128,256 \
    --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput $DEFAULTS" \
    --system-args "adaptive-spec:flap8=--adaptive-spec-force flap:8 $DEFAULTS" > /tmp/sweep-r0.txt &
  RUN_FLAGS+=(--start-timeout-s 360)
  sweep 1 defaults-moe /tmp/moe-16/target /tmp/moe-16/draft-random plain,eagle3,adaptive-spec:goodput \
    --concurrency 1,4,16,64 --time-budget-s 8 \
    --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput $DEFAULTS" > /tmp/sweep-r1.txt
  wait; cat /tmp/sweep-r0.txt /tmp/sweep-r1.txt | grep -v "^\s*$" | tail -60
  grep -h -i -E "plain off path|Traceback|Error" /tmp/logs-defaults-*/*.log \
    | grep -v -e openai_harmony -e "Responses API" | sort | uniq -c | head -20
  pack_logs logs-r.tar.xz /tmp/logs-defaults-*/*.log ;;
*) echo "usage: call_s13.sh r"; exit 2 ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
say "done $1"
