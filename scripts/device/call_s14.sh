#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, session 14 (2026-11-30). Cases (all three ran in session 14, in
# the order lz (commit a2d0dca), pp (f2960b6), tg (36d92c3); results 2026-11-30-s14-*):
#   lz (~9 min) `--adaptive-spec-plain-kv lazy` (new this session: the plain off step tops the
#      spec KV reserve up only when a request has used it up) against reserve (the default) and
#      the plain server, forced off, with the phase clocks (prepare_for_decode is where reserve
#      paid more than plain in session 13): GPU 0 dense, 64 / 256 requests, 4 repeats; GPU 1
#      the Qwen3-MoE layout (16 layers, random draft), 1 / 4 requests, 4 repeats.
#   tg (~9 min) issue 3's threshold table on the plain off path, with flapping every 8 steps
#      in the always-right column (its accept length in the drafting steps vs eagle3's, lossless,
#      and the stale draft KV's cost: acceptance by drafting round since re-entry): GPU 0
#      always-right draft, plain, eagle3, threshold (the default policy), flap8; GPU 1
#      always-wrong draft, plain, eagle3, threshold, goodput; 1 / 16 / 64 / 128 / 256.
#   pp (~9 min) `--adaptive-spec-off-prefill plain` (new this session: a prefill while drafting
#      is off runs as the plain server's, no draft prefill; `lz` showed the off step's
#      preparation at plain's cost with lazy, yet forced off still 0.90x of plain at 64, and its
#      phase clocks put the extra time in the spec worker around prefills): GPU 0 dense
#      always-right pair, plain, forced off (lazy), forced off (lazy, plain prefill), flapping
#      every 8 steps (lazy, plain prefill: lossless across prefills of both kinds), 64 / 256,
#      3 repeats; GPU 1 dense dial 0.7, plain, eagle3, goodput (defaults), goodput (lazy, plain
#      prefill), 1 / 16 / 64 / 128 / 256.
#   op (~9 min; ran first in session 15, commit aa8929e) issue 3's forced-off claim with plain
#      prefills, more pairs: GPU 0 dense, plain vs forced off (plain prefills) at 64 / 128 / 256,
#      4 repeats; GPU 1 the Qwen3-MoE layout (random draft), plain vs forced off with and without
#      plain prefills at 1 / 4, 4 repeats.
# (t2, prepared here, ran in session 15 on the newer defaults as call_s15.sh t2.)
# call_s13.sh th | b | ds | g0 run on the defaults of the code they travel with.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s14.sh lz|tg|pp|op
source scripts/device/common.sh

# GPU 0: the dense always-right pair (/tmp/al-8b); GPU 1: the Qwen3-MoE layout, 16 layers, random
# draft (/tmp/moe-16); built at once, exits 3 when either build fails.
build_dense_and_moe() {
  local p0 p1
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/al-8b aligned --preset 8b ) & p0=$!
  ( export CUDA_VISIBLE_DEVICES=1; build_pair /tmp/moe-16 random --preset qwen3-moe --layers 16 ) & p1=$!
  { wait $p0 && wait $p1; } || { tail -30 "$OUT/build.log"; exit 3; }
  say "models built (code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown})"
}

case "${1:-}" in
lz)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_PHASE_TIMING=1
  build_dense_and_moe
  OFF="--adaptive-spec-force off --adaptive-spec-off-path plain"
  SYSTEMS=plain,adaptive-spec:off-reserve,adaptive-spec:off-lazy
  KV_ARGS=(--system-args "adaptive-spec:off-reserve=$OFF --adaptive-spec-plain-kv reserve"
           --system-args "adaptive-spec:off-lazy=$OFF --adaptive-spec-plain-kv lazy")
  sweep 0 lazy-dense /tmp/al-8b/target /tmp/al-8b/draft-aligned $SYSTEMS "${KV_ARGS[@]}" \
    --concurrency 64,256 --repeat 4 --time-budget-s 7 --time-budget-from 256:7 > /tmp/sweep-lz0.txt &
  RUN_FLAGS+=(--start-timeout-s 360)
  sweep 1 lazy-moe /tmp/moe-16/target /tmp/moe-16/draft-random $SYSTEMS "${KV_ARGS[@]}" \
    --concurrency 1,4 --repeat 4 --time-budget-s 7 > /tmp/sweep-lz1.txt
  wait; cat /tmp/sweep-lz0.txt /tmp/sweep-lz1.txt | grep -v "^\s*$" | tail -40
  phases /tmp/logs-lazy-dense; phases /tmp/logs-lazy-moe
  log_report logs-lz.tar.xz /tmp/logs-lazy-*/*.log ;;
tg)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_two_pairs /tmp/al-8b aligned /tmp/rw-8b random --preset 8b
  say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
  sweep 0 threshold-aligned /tmp/al-8b/target /tmp/al-8b/draft-aligned \
    plain,eagle3,adaptive-spec:threshold,adaptive-spec:flap8 --concurrency 1,16,64,128,256 \
    --system-args "adaptive-spec:flap8=--adaptive-spec-force flap:8" > /tmp/sweep-tg0.txt &
  sweep 1 threshold-random /tmp/rw-8b/target /tmp/rw-8b/draft-random \
    plain,eagle3,adaptive-spec:threshold,adaptive-spec:goodput --concurrency 1,16,64,128,256 \
    --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput" > /tmp/sweep-tg1.txt
  wait; cat /tmp/sweep-tg0.txt /tmp/sweep-tg1.txt | grep -v "^\s*$" | tail -60
  python3 - "$OUT"/sweep-threshold-aligned.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for name, s in d["systems"].items():
    for rank in (s.get("final_status") or [])[:1]:
        row = (rank.get("reentry") or {}).get("accept_len_by_round_since_reentry")
        if row:
            print(name, "accept length by drafting round since re-entry:", json.dumps(row))
PY
  log_report logs-tg.tar.xz /tmp/logs-threshold-*/*.log ;;
pp)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_two_pairs /tmp/al-8b aligned /tmp/soak-8b dial:0.7 --preset 8b
  say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
  LAZY="--adaptive-spec-plain-kv lazy"; PP="$LAZY --adaptive-spec-off-prefill plain"
  ( export ADAPTIVE_SPEC_PHASE_TIMING=1; sweep 0 prefill-off /tmp/al-8b/target /tmp/al-8b/draft-aligned \
    plain,adaptive-spec:off-lazy,adaptive-spec:off-pp,adaptive-spec:flap8-pp \
    --concurrency 64,256 --repeat 3 --time-budget-s 7 --time-budget-from 256:7 \
    --system-args "adaptive-spec:off-lazy=--adaptive-spec-force off $LAZY" \
    --system-args "adaptive-spec:off-pp=--adaptive-spec-force off $PP" \
    --system-args "adaptive-spec:flap8-pp=--adaptive-spec-force flap:8 $PP" > /tmp/sweep-pp0.txt ) &
  sweep 1 prefill-goodput /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput,adaptive-spec:goodput-pp --concurrency 1,16,64,128,256 \
    --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput" \
    --system-args "adaptive-spec:goodput-pp=--adaptive-spec-policy goodput $PP" > /tmp/sweep-pp1.txt
  wait; cat /tmp/sweep-pp0.txt /tmp/sweep-pp1.txt | grep -v "^\s*$" | tail -60
  phases /tmp/logs-prefill-off > /dev/null
  log_report logs-pp.tar.xz /tmp/logs-prefill-*/*.log ;;
op)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_dense_and_moe
  OFF="--adaptive-spec-force off"; PP="--adaptive-spec-off-prefill plain"
  sweep 0 off-prefill-dense /tmp/al-8b/target /tmp/al-8b/draft-aligned plain,adaptive-spec:off-pp \
    --concurrency 64,128,256 --repeat 4 --time-budget-s 6 --time-budget-from 128:6 \
    --system-args "adaptive-spec:off-pp=$OFF $PP" > /tmp/sweep-op0.txt &
  RUN_FLAGS+=(--start-timeout-s 360)
  sweep 1 off-prefill-moe /tmp/moe-16/target /tmp/moe-16/draft-random \
    plain,adaptive-spec:forced-off,adaptive-spec:off-pp --concurrency 1,4 --repeat 4 --time-budget-s 6 \
    --system-args "adaptive-spec:off-pp=$OFF $PP" > /tmp/sweep-op1.txt
  wait; cat /tmp/sweep-op0.txt /tmp/sweep-op1.txt | grep -v "^\s*$" | tail -50
  log_report logs-op.tar.xz /tmp/logs-off-prefill-*/*.log ;;
*) echo "usage: call_s14.sh lz|tg|pp|op"; exit 2 ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
say "done $1"
