#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, session 13 (2026-11-30). Session 13 ran call_s12.sh g (its fifth
# server did not fit on one GPU), t, and a (rewritten in session 13: the four-server goodput
# table with the plain off path, and the plain-kv A/B on the MoE layout); then this:
#   r  (~6 min) the off path plain with plain KV release (the defaults when it ran, commit
#      1bf09c0; plain KV went back to reserve after the MoE A/B of call a) in the four-way table: GPU 0, dense dial 0.7: plain, eagle3, goodput, and flapping every 8 steps
#      (transitions under release, lossless vs plain), 1 / 16 / 64 / 128 / 256; GPU 1, the
#      Qwen3-MoE layout (16 layers, random draft: always wrong), plain, eagle3, goodput at
#      1 / 4 / 16 / 64 (issue 10's cell: session 12 read 0.87-0.96x with reserve).
# Prepared for the next session, not run (the plain off path is the default there; at most four
# servers per GPU: five need ~147 GiB, more than one H200 holds):
#   th (~8 min) issue 3's threshold table with the plain off path: plain, eagle3, threshold
#      (the default policy), goodput; GPU 0 always-right draft, GPU 1 always-wrong.
#   b  (~8 min) issue 5's comparison with SGLang's built-in adaptive mode on the plain off path:
#      plain, eagle3, builtin-adaptive, goodput; GPU 0 dial 0.7, GPU 1 dial 0.5.
#   ds (~8 min) issue 10 on the DeepSeek-V3 layout (MLA + MoE, 16 layers): plain, eagle3,
#      goodput at 1 / 4 / 16 / 64; GPU 0 dial 0.7, GPU 1 always-wrong.
#   g0 (~5 min) what stale draft KV costs (NOTES-reentry-catchup.md, G0): plain, eagle3 and
#      flapping every 8 and every 32 steps at 1 and 16 requests, GPU 0 the always-right pair,
#      GPU 1 dial 0.7; read each flapping server's final_status.reentry
#      .accept_len_by_round_since_reentry (rounds right after a re-entry vs the rest).
#   fo (~8 min) issue 3's forced-off gap with the session-13 code, with the phase clocks (where
#      the off step's remaining host time goes): GPU 0 dense, plain vs forced off at 64 / 256,
#      4 pairs; GPU 1 MoE layout, plain vs forced off at 1 / 4, 3 pairs.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s13.sh r|th|b|ds|g0|fo
source scripts/device/common.sh

# One sweep per GPU at once: $1 / $2 name and draft dir on GPU 0 (the target beside the draft),
# $3 / $4 on GPU 1; the rest: the systems and sweep flags both share.
sweep_both() {
  local n0=$1 d0=$2 n1=$3 d1=$4; shift 4
  sweep 0 "$n0" "${d0%/*}/target" "$d0" "$@" > "/tmp/out-$n0.txt" &
  sweep 1 "$n1" "${d1%/*}/target" "$d1" "$@" > "/tmp/out-$n1.txt"
  wait; cat "/tmp/out-$n0.txt" "/tmp/out-$n1.txt" | grep -v "^\s*$" | tail -60
}

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
th)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_two_pairs /tmp/al-8b aligned /tmp/rw-8b random --preset 8b
  sweep_both threshold-aligned /tmp/al-8b/draft-aligned threshold-random /tmp/rw-8b/draft-random \
    plain,eagle3,adaptive-spec:threshold,adaptive-spec:goodput --concurrency 1,16,64,128,256 \
    --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput"
  pack_logs logs-th.tar.xz /tmp/logs-threshold-*/*.log ;;
b)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_two_pairs /tmp/soak-8b dial:0.7 /tmp/d5-8b dial:0.5 --preset 8b
  sweep_both builtin-dial-0.7 /tmp/soak-8b/draft-dial-0.7 builtin-dial-0.5 /tmp/d5-8b/draft-dial-0.5 \
    plain,eagle3,builtin-adaptive,adaptive-spec:goodput --concurrency 1,16,64,128,256 \
    --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput --adaptive-spec-log-decisions"
  pack_logs logs-b.tar.xz /tmp/logs-builtin-dial-*/*.log ;;
ds)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_two_pairs /tmp/ds-16 dial:0.7 /tmp/ds-16r random --preset deepseek-v3 --layers 16
  RUN_FLAGS+=(--start-timeout-s 360)
  sweep_both ds-dial-0.7 /tmp/ds-16/draft-dial-0.7 ds-random /tmp/ds-16r/draft-random \
    plain,eagle3,adaptive-spec:goodput --concurrency 1,4,16,64 --time-budget-s 8 \
    --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput"
  grep -h -i -E "plain off path|Traceback|Error" /tmp/logs-ds-*/*.log \
    | grep -v -e openai_harmony -e "Responses API" | sort | uniq -c | head -20
  pack_logs logs-ds.tar.xz /tmp/logs-ds-*/*.log ;;
g0)
  export DEADLINE_S=${DEADLINE_S:-330} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_two_pairs /tmp/al-8b aligned /tmp/soak-8b dial:0.7 --preset 8b
  sweep_both stale-aligned /tmp/al-8b/draft-aligned stale-dial-0.7 /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:flap8,adaptive-spec:flap32 --concurrency 1,16 \
    --system-args "adaptive-spec:flap8=--adaptive-spec-force flap:8" \
    --system-args "adaptive-spec:flap32=--adaptive-spec-force flap:32"
  for f in "$OUT"/sweep-stale-*.json; do python3 - "$f" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for name, s in d["systems"].items():
    for rank in (s.get("final_status") or [])[:1]:
        row = (rank.get("reentry") or {}).get("accept_len_by_round_since_reentry")
        if row:
            print(sys.argv[1].rsplit("/", 1)[-1], name, json.dumps(row))
PY
  done
  pack_logs logs-g0.tar.xz /tmp/logs-stale-*/*.log ;;
fo)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/al-8b aligned --preset 8b ) & p0=$!
  ( export CUDA_VISIBLE_DEVICES=1; build_pair /tmp/moe-16 random --preset qwen3-moe --layers 16 ) & p1=$!
  { wait $p0 && wait $p1; } || { tail -30 "$OUT/build.log"; exit 3; }
  ( export ADAPTIVE_SPEC_PHASE_TIMING=1
    sweep 0 off-pinned /tmp/al-8b/target /tmp/al-8b/draft-aligned plain,adaptive-spec:forced-off \
      --concurrency 64,256 --repeat 4 --time-budget-s 8 --time-budget-from 128:8 > /tmp/sweep-fo0.txt ) &
  RUN_FLAGS+=(--start-timeout-s 360)
  ( export ADAPTIVE_SPEC_PHASE_TIMING=1
    sweep 1 moe-off /tmp/moe-16/target /tmp/moe-16/draft-random plain,adaptive-spec:forced-off \
      --concurrency 1,4 --repeat 3 --time-budget-s 8 > /tmp/sweep-fo1.txt )
  wait; cat /tmp/sweep-fo0.txt /tmp/sweep-fo1.txt | grep -v "^\s*$" | tail -40
  phases /tmp/logs-off-pinned; phases /tmp/logs-moe-off
  pack_logs logs-fo.tar.xz /tmp/logs-off-pinned/*.log /tmp/logs-moe-off/*.log ;;
*) echo "usage: call_s13.sh r (run) | th|b|ds|g0|fo (prepared)"; exit 2 ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
say "done $1"
