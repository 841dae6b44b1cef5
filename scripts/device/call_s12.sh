#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, session 12 (2026-11-30). Session 12 ran call_s11.sh h and s
# (results 2026-11-30-s12-verify-*); this runs what it built after:
#   p  (~9 min) the first servers on `--adaptive-spec-off-path plain` (hooks_plain.py: an off
#      step is a plain decode batch in the scheduler too). GPU 0, dense 8B pair, aligned draft:
#      plain vs forced off on the plain path vs flapping every 8 steps on it (run 1: every
#      step), 1 / 64 / 256 requests, 2 paired repeats (greedy: every system's outputs compared
#      with plain's, token for token). GPU 1, Qwen3-MoE layout (16 layers, random draft): plain vs forced off plain
#      vs forced off lean at 1 / 4 / 64 requests (issue 10: lean made 0.63x of plain at 1).
# Run 1 (flapping every step) found SGLang's decode log dividing by zero spec rounds after
# intervals of plain steps alone (fixed: they count as 1-token rounds).
# Prepared in session 12: a, g, t; session 13 ran g, t and a (a rewritten, see its case).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s12.sh p|q|m|a|g|t
source scripts/device/common.sh
case "${1:-}" in
p)
  export DEADLINE_S=${DEADLINE_S:-550} ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/al-8b aligned --preset 8b ) & p0=$!
  ( export CUDA_VISIBLE_DEVICES=1; build_pair /tmp/moe-16 random --preset qwen3-moe --layers 16 ) & p1=$!
  { wait $p0 && wait $p1; } || { tail -30 "$OUT/build.log"; exit 3; }
  say "models built"
  PLAIN="--adaptive-spec-off-path plain"
  sweep 0 plain-regime /tmp/al-8b/target /tmp/al-8b/draft-aligned \
    plain,adaptive-spec:forced-off-plain,adaptive-spec:flap8-plain \
    --concurrency 1,64,256 --repeat 2 --time-budget-s 8 --time-budget-from 128:8 \
    --system-args "adaptive-spec:forced-off-plain=--adaptive-spec-force off $PLAIN" \
    --system-args "adaptive-spec:flap8-plain=--adaptive-spec-force flap:8 $PLAIN" > /tmp/sweep-p0.txt &
  RUN_FLAGS+=(--start-timeout-s 360)
  sweep 1 moe-plain-regime /tmp/moe-16/target /tmp/moe-16/draft-random \
    plain,adaptive-spec:forced-off-plain,adaptive-spec:forced-off \
    --concurrency 1,4,64 --time-budget-s 8 \
    --system-args "adaptive-spec:forced-off-plain=--adaptive-spec-force off $PLAIN" \
    --system-args "adaptive-spec:forced-off=--adaptive-spec-force off" > /tmp/sweep-p1.txt
  wait; cat /tmp/sweep-p0.txt /tmp/sweep-p1.txt | grep -v "^\s*$" | tail -60
  grep -h -i -E "plain off path|Traceback|Error" /tmp/logs-plain-regime/*.log /tmp/logs-moe-plain-regime/*.log \
    | grep -v -e openai_harmony -e "Responses API" | sort | uniq -c | head -20
  pack_logs logs-p.tar.xz /tmp/logs-plain-regime/*.log /tmp/logs-moe-plain-regime/*.log ;;
q)
  # (~6.5 min) after p: GPU 0, plain vs forced off plain at 64 and 256 requests, 4 paired repeats
  # under half the host's cores (p's 2 repeats read 0.77-1.02x); GPU 1, issue 10's cell: the
  # goodput policy with the plain off path vs plain on the Qwen3-MoE layout, random draft
  # (session 11: goodput with decode-lean made 0.63x of plain at 1 request).
  export DEADLINE_S=${DEADLINE_S:-470} ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/al-8b aligned --preset 8b ) & p0=$!
  ( export CUDA_VISIBLE_DEVICES=1; build_pair /tmp/moe-16 random --preset qwen3-moe --layers 16 ) & p1=$!
  { wait $p0 && wait $p1; } || { tail -30 "$OUT/build.log"; exit 3; }
  PLAIN="--adaptive-spec-off-path plain"
  sweep 0 off-plain-pinned /tmp/al-8b/target /tmp/al-8b/draft-aligned plain,adaptive-spec:forced-off-plain \
    --concurrency 64,256 --repeat 4 --time-budget-s 8 --time-budget-from 128:8 \
    --system-args "adaptive-spec:forced-off-plain=--adaptive-spec-force off $PLAIN" > /tmp/sweep-q0.txt &
  RUN_FLAGS+=(--start-timeout-s 360)
  sweep 1 moe-goodput-plain /tmp/moe-16/target /tmp/moe-16/draft-random plain,adaptive-spec:goodput-plain \
    --concurrency 1,4,16,64 --time-budget-s 8 \
    --system-args "adaptive-spec:goodput-plain=--adaptive-spec-policy goodput $PLAIN" > /tmp/sweep-q1.txt
  wait; cat /tmp/sweep-q0.txt /tmp/sweep-q1.txt | grep -v "^\s*$" | tail -40
  grep -h -i -E "plain off path|Traceback|Error" /tmp/logs-off-plain-pinned/*.log /tmp/logs-moe-goodput-plain/*.log \
    | grep -v -e openai_harmony -e "Responses API" | sort | uniq -c | head -20
  pack_logs logs-q.tar.xz /tmp/logs-off-plain-pinned/*.log /tmp/logs-moe-goodput-plain/*.log ;;
m)
  # (~5 min, after q on the same machine: the MoE pair is built) plain vs forced off plain on
  # the Qwen3-MoE layout at 1 and 4 requests, 3 paired repeats (p read 1.07x / 0.93x once).
  export DEADLINE_S=${DEADLINE_S:-330} ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( export CUDA_VISIBLE_DEVICES=1; build_pair /tmp/moe-16 random --preset qwen3-moe --layers 16 ) || exit 3
  RUN_FLAGS+=(--start-timeout-s 360)
  sweep 1 moe-off-plain-paired /tmp/moe-16/target /tmp/moe-16/draft-random plain,adaptive-spec:forced-off-plain \
    --concurrency 1,4 --repeat 3 --time-budget-s 8 \
    --system-args "adaptive-spec:forced-off-plain=--adaptive-spec-force off --adaptive-spec-off-path plain" \
    > /tmp/sweep-m1.txt
  grep -v "^\s*$" /tmp/sweep-m1.txt | tail -20
  pack_logs logs-m.tar.xz /tmp/logs-moe-off-plain-paired/*.log ;;
a)
  # (~9 min; session 13 replaced the prepared `a`: g's fifth server did not fit on one GPU,
  # five servers need ~147 GiB) GPU 0, dense dial 0.7: plain, eagle3, goodput (decode-lean) and
  # goodput on the plain off path side by side (four servers, ~117 GiB), 1 / 16 / 64 / 128 /
  # 256; GPU 1, the MoE layout at 1 and 4 requests with the phase clocks on: forced off on the
  # plain path with `--adaptive-spec-plain-kv release` (a plain step allocates as the plain
  # server does) against the default reserve, 3 paired repeats, lossless checked.
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/soak-8b dial:0.7 --preset 8b ) & p0=$!
  ( export CUDA_VISIBLE_DEVICES=1; build_pair /tmp/moe-16 random --preset qwen3-moe --layers 16 ) & p1=$!
  { wait $p0 && wait $p1; } || { tail -30 "$OUT/build.log"; exit 3; }
  say "models built"
  sweep 0 goodput-plain-4 /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput,adaptive-spec:goodput-plain --concurrency 1,16,64,128,256 \
    --system-args "adaptive-spec:goodput-plain=--adaptive-spec-policy goodput --adaptive-spec-off-path plain --adaptive-spec-log-decisions" \
    > /tmp/sweep-a0.txt &
  RUN_FLAGS+=(--start-timeout-s 360)
  ( export ADAPTIVE_SPEC_PHASE_TIMING=1
    sweep 1 plain-kv-moe /tmp/moe-16/target /tmp/moe-16/draft-random \
      plain,adaptive-spec:off-reserve,adaptive-spec:off-release --concurrency 1,4 --repeat 3 --time-budget-s 8 \
      --system-args "adaptive-spec:off-reserve=--adaptive-spec-force off --adaptive-spec-off-path plain" \
      --system-args "adaptive-spec:off-release=--adaptive-spec-force off --adaptive-spec-off-path plain --adaptive-spec-plain-kv release" \
      > /tmp/sweep-a1.txt )
  wait; cat /tmp/sweep-a0.txt /tmp/sweep-a1.txt | grep -v "^\s*$" | tail -50
  phases /tmp/logs-plain-kv-moe
  grep -h -i -E "plain off path|Traceback|Error" /tmp/logs-goodput-plain-4/*.log /tmp/logs-plain-kv-moe/*.log \
    | grep -v -e openai_harmony -e "Responses API" | sort | uniq -c | head -20
  pack_logs logs-a.tar.xz /tmp/logs-goodput-plain-4/*.log /tmp/logs-plain-kv-moe/*.log ;;
g)
  # (~9 min, prepared, not run) issues 3 and 5 on the dense pair with the plain off path: the
  # four systems plus goodput on plain, dial 0.7 (GPU 0) and 0.5 (GPU 1), 1 / 16 / 64 / 128 / 256
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_two_pairs /tmp/soak-8b dial:0.7 /tmp/d5-8b dial:0.5 --preset 8b
  G=("$FOUR,adaptive-spec:goodput-plain" --concurrency 1,16,64,128,256  # five systems: fewer levels
    --system-args "adaptive-spec:goodput-plain=--adaptive-spec-policy goodput --adaptive-spec-off-path plain --adaptive-spec-log-decisions")
  sweep 0 goodput-plain-dial-0.7 /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 "${G[@]}" > /tmp/sweep-g0.txt &
  sweep 1 goodput-plain-dial-0.5 /tmp/d5-8b/target /tmp/d5-8b/draft-dial-0.5 "${G[@]}" > /tmp/sweep-g1.txt
  wait; cat /tmp/sweep-g0.txt /tmp/sweep-g1.txt
  pack_logs logs-g.tar.xz /tmp/logs-goodput-plain-dial-*/*.log ;;
t)
  # (~7 min, prepared, not run; both GPUs) tensor parallel 2 with the plain off path: plain,
  # goodput on plain and flapping every 8 steps on plain at 1 / 16 / 64 / 256 (lossless vs plain),
  # then the two ranks' decision digests compared (issue 9)
  export DEADLINE_S=${DEADLINE_S:-420} ADAPTIVE_SPEC_RANK_CHECK_EVERY=512 NCCL_NVLS_ENABLE=0
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/dial-8b dial:0.7 --preset 8b ) || exit 3
  sweep 0,1 tp2-plain /tmp/dial-8b/target /tmp/dial-8b/draft-dial-0.7 \
    plain,adaptive-spec:goodput-plain,adaptive-spec:flap8-plain --server-arg "--tp-size 2" \
    --concurrency 1,16,64,256 \
    --system-args "adaptive-spec:goodput-plain=--adaptive-spec-policy goodput --adaptive-spec-off-path plain --adaptive-spec-log-decisions" \
    --system-args "adaptive-spec:flap8-plain=--adaptive-spec-force flap:8 --adaptive-spec-off-path plain"
  for f in /tmp/logs-tp2-plain/server-adaptive-spec_*.log; do python3 "$REPO/scripts/device/rank_check.py" "$f"; done
  pack_logs logs-t.tar.xz /tmp/logs-tp2-plain/*.log ;;
*) echo "usage: call_s12.sh p|q|m (run) | a|g|t (prepared)"; exit 2 ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
say "done $1"
