#!/usr/bin/env bash
# Session 47 (one GPU). On an H100 (80 GB) no builtin and 1-128 requests: three 8B servers
# sized for 256 ran out of its memory at start (2026-12-06-s47-run-fs-oom.log), for 128 they ran.
#   fs (~5 min on an H100, ~9 on an H200) issue 5's same-run sweep on the current code: plain,
#      eagle3, SGLang's built-in adaptive and goodput at 1 / 4 / 16 / 32 / 64 / 128 / 256
#      requests (CONC), one pass (PASSES), the sweep's 5-s levels (7 / 8 s at 128 / 256; LEVEL_S
#      sets those below 128), DIAL (0.7, 0.5, 0.9 or random: the always-wrong draft); the step-time
#      samples of goodput and of forced on / off where SYSTEMS has them, and goodput's decisions
#      kept. Ran in session 47 on an H100 (1-128, no builtin): dial 0.7 twice, random
#      once (RESULTS-HISTORY, Session 47), dials 0.9 / 0.5 in session 50; not run yet: an
#      H200's four systems with 256.
#   ms (~9 min) issue 10's sweep, the same on the 16-layer Qwen3-MoE layout (last swept at 1-256
#      in sessions 4 and 16, prefill graphs off; 4 / 16 alone on SGLang's defaults, session 35).
#   START=serial (since session 61) starts the servers one after another, each alone on the GPU:
#      an H100 then runs all four systems, 256 included, e.g. CONC=64,128,256 START=serial
#      bash scripts/device/call_s47.sh fs (each start costs a minute; at 1-256 the call
#      outlasts a device command's 10 minutes). Session 63 (H100): 462 s at 64 / 128 / 256.
#   kd | lv | il | sv | ds | r64 | rc | rs | ...: sessions 37-46's calls.
# Usage (repo root, .bundle and .device carried):
#   [DIAL=0.9] [START=serial] bash scripts/device/call_s47.sh fs|ms
case "${1:-}" in
fs|ms) ;;
*) exec bash scripts/device/call_s46.sh "$@" ;;
esac
PREFILL_GRAPH=${PREFILL_GRAPH:-breakable}  # SGLang's default, which common.sh turns off otherwise
source scripts/device/common.sh
say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"  # RUN_FLAGS add its decision log
dial_draft $1
if [ "$1" = fs ]; then
  KIND=dense PAIR=/tmp/soak-8b
  dense_pinned_setup "$TAG"
  build_pair "$PAIR" "$DRAFT" --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
else  # the MoE pair (its slower start, Triton's MoE JIT: the sweep's --start-timeout-s below)
  KIND=moe PAIR=/tmp/moe-16
  pinned_setup "$TAG"
  build_pair "$PAIR" "$DRAFT" --preset qwen3-moe --layers 16 \
    || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
fi
export ADAPTIVE_SPEC_SAMPLE_LOG=1
SYSTEMS=${SYSTEMS:-$FOUR}
GPU_MIB=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
START=${START:-parallel}
case "$START" in parallel|serial) ;; *) echo "START must be parallel or serial" >&2; exit 2 ;; esac
if [ "${GPU_MIB:-0}" -lt 100000 ] && [ "$START" = parallel ]; then
  # an H100 with the servers side by side: three 8B servers fit, sized for 128 (session 47)
  [ "$SYSTEMS" = "$FOUR" ] && SYSTEMS=plain,eagle3,adaptive-spec:goodput
  CONC=${CONC:-1,4,16,32,64,128}; say "${GPU_MIB} MiB of GPU memory: $SYSTEMS at $CONC"
fi
sweep 0 "$TAG-$KIND" "$PAIR/target" "$PAIR/draft-${DRAFT/:/-}" "$SYSTEMS" \
  --concurrency "${CONC:-1,4,16,32,64,128,256}" --repeat "${PASSES:-1}" --start-timeout-s 360 \
  --start-mode "$START" \
  ${LEVEL_S:+--time-budget-s "$LEVEL_S"} --system-args "$GOODPUT" > "/tmp/tail-$TAG.txt"
keep_ours_logs "$TAG" "$KIND"
for s in forced-on forced-off; do  # an empty file for one not in this run
  [[ ",$SYSTEMS," == *",adaptive-spec:$s,"* ]] || rm -f "$OUT/samples-$TAG-$s.txt"
done
report "$TAG-$KIND" "logs-$TAG-$KIND.tar.xz" "/tmp/tail-$TAG.txt"  # this pair's logs only
SWEPT=$OUT/sweep-$TAG-$KIND.json
goodput_paired "$SWEPT" envelope plain eagle3
[[ "$SYSTEMS" == *builtin-adaptive* ]] && goodput_paired "$SWEPT" builtin-adaptive
GOODPUT_SAMPLES=$OUT/samples-$TAG-goodput.txt
( cd /tmp && python3 -m adaptive_spec.bench.sample_summary --realized "$GOODPUT_SAMPLES"
  python3 -m adaptive_spec.bench.sample_summary --arrivals "$GOODPUT_SAMPLES" ) 2>&1 \
  | tail -40
grep -o "model=[^ ]*\( held=[^ ]*\)\?" "$OUT/decisions-$TAG.log" | sort | uniq -c | sort -rn \
  | head -12
goodput_cost_model "$SWEPT"
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$TAG"
