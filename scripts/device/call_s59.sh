#!/usr/bin/env bash
# Session 59 (one GPU, H100 or H200).
#   m4 (~9 min) issue 10's same-run sweep with SGLang's built-in adaptive mode on the 16-layer
#      Qwen3-MoE layout (dial DIAL, default 0.7): plain, EAGLE-3, built-in and goodput. Four MoE
#      servers (~21 GB of weights each) do not fit an H100's 80 GB at once: there they start one
#      after another (--start-mode serial, ~60-130 s each) at 4 / 16 / 64 / 128 requests
#      (CONC); on an H200 all at once at 1-256. Goodput's step-time samples and decisions kept.
#      One after another, the servers run in the order of SYSTEMS, so the last one always meets
#      the GPU after the others' levels (session 59: goodput last in all three calls); ROTATE=n
#      starts the four at the n-th (0-3) to spread that over calls. SYSTEMS and CONC narrow it,
#      e.g. SYSTEMS=eagle3,adaptive-spec:forced-on,adaptive-spec:goodput CONC=128: whether our
#      k = 3 step costs what EAGLE-3's does at 128 (session 59: goodput's took 7% longer);
#      STACKS=1 adds the scheduler thread's stack samples (ADAPTIVE_SPEC_STACK_SAMPLER) of every
#      server and their table near 127 running: which functions hold a step's host time. Since
#      session 60 the phase clocks' per-call table (decode and prefill calls apart) is printed.
#      Since session 61 LAYOUT=ds runs the same on the 16-layer DeepSeek-V3 layout (MLA + MoE;
#      issue 10's second shape, never swept with the built-in mode) instead of Qwen3-MoE.
#      Session 62 (H100): at CONC=1,32,256 each MoE server took ~155 s, so the fourth met the
#      deadline before its first level; three per call fit (SYSTEMS=plain,adaptive-spec:goodput,
#      eagle3 CONC=1,32,256: 528 s). Session 63 (H100, five calls chained on one warm machine):
#      at one request goodput's k = 3 steps took 4.0-4.2 ms against the built-in mode's 3.8 (the
#      phase clocks: +0.3 ms in spec_forward, host time); STACKS_AT=1 (default 127) puts the
#      stack table near one running, e.g. STACKS=1 STACKS_AT=1 SYSTEMS=builtin-adaptive,
#      adaptive-spec:forced-on,adaptive-spec:goodput CONC=1: where that host time goes.
#      Session 64 (H100, that call): forced on's k = 3 steps ran faster than the built-in mode's
#      (no fixed cost of our path), and goodput ran plain through the level on a switch price
#      read from catch-ups that built kernels (no samples since); next, whether it drafts now:
#      SYSTEMS=adaptive-spec:goodput,adaptive-spec:forced-on,eagle3 CONC=1 PASSES=2.
#      ADAPTIVE_SPEC_WARM_SWITCH=1 (the servers inherit it) adds the opt-in switch warm-up; the
#      tail then shows its line, and any kernel still built in a slow result after it.
#      Since session 65 SYSTEMS may name adaptive-spec:goodput-warm: goodput with that warm-up
#      on its command line (`--warmups adaptive_spec_extend,adaptive_spec_switch`), so one run
#      holds goodput with and without it, e.g. SYSTEMS=adaptive-spec:goodput,
#      adaptive-spec:goodput-warm,eagle3 CONC=1 PASSES=2.
#   m1 | fs | ms | ...: session 48's and earlier calls (call_s48.sh), on the code as it stands.
# Usage (repo root, .bundle and .device carried):
#   [DIAL=0.7] [LAYOUT=moe|ds] bash scripts/device/call_s59.sh m4
case "${1:-}" in
m4) ;;
*) exec bash scripts/device/call_s48.sh "$@" ;;
esac
PREFILL_GRAPH=${PREFILL_GRAPH:-breakable}  # SGLang's default, which common.sh turns off otherwise
source scripts/device/common.sh
say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"  # RUN_FLAGS add its decision log
WARM_SWITCH="adaptive-spec:goodput-warm=--adaptive-spec-policy goodput"
WARM_SWITCH+=" --warmups adaptive_spec_extend,adaptive_spec_switch"
dial_draft m4
LAYOUT=${LAYOUT:-moe}
case "$LAYOUT" in
moe) PRESET=qwen3-moe ;;
ds) PRESET=deepseek-v3 ;;
*) echo "LAYOUT must be moe or ds, not '$LAYOUT'" >&2; exit 2 ;;
esac
PAIR=/tmp/$LAYOUT-16
pinned_setup "$TAG"
build_pair "$PAIR" "$DRAFT" --preset "$PRESET" --layers 16 || { tail -30 "$OUT/build.log"; exit 3; }
say "model built ($PRESET, 16 layers)"
export ADAPTIVE_SPEC_SAMPLE_LOG=1
[ "${STACKS:-0}" = 1 ] && export ADAPTIVE_SPEC_STACK_SAMPLER=1
GPU_MIB=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
START=parallel LEVELS=1,4,16,32,64,128,256
[ "${GPU_MIB:-0}" -lt 100000 ] && START=serial LEVELS=4,16,64,128
say "${GPU_MIB} MiB of GPU memory: servers start $START"
IFS=, read -ra ALL <<< "${SYSTEMS:-$FOUR}"
N=${ROTATE:-0}; ORDERED=$(IFS=,; echo "${ALL[*]:N},${ALL[*]:0:N}"); ORDERED=${ORDERED%,}
say "systems in order: $ORDERED"
sweep 0 "$TAG-$LAYOUT" "$PAIR/target" "$PAIR/draft-${DRAFT/:/-}" "$ORDERED" \
  --concurrency "${CONC:-$LEVELS}" --repeat "${PASSES:-1}" --start-mode "$START" \
  --start-timeout-s 360 ${LEVEL_S:+--time-budget-s "$LEVEL_S"} --system-args "$GOODPUT" \
  --system-args "$WARM_SWITCH" > "/tmp/tail-$TAG.txt"
keep_ours_logs "$TAG" "$LAYOUT"
grep -h "adaptive_spec samples" "/tmp/logs-$TAG-$LAYOUT/server-adaptive-spec_goodput-warm.log" \
  > "$OUT/samples-$TAG-goodput-warm.txt" 2> /dev/null
for s in forced-on forced-off goodput-warm; do  # an empty file for one not in this run
  [[ ",$ORDERED," == *",adaptive-spec:$s,"* ]] || rm -f "$OUT/samples-$TAG-$s.txt"
done
# this layout's logs only: a warm machine keeps an earlier call's (session 61's call 3 packed
# call 1's)
report "$TAG-$LAYOUT" "logs-$TAG-$LAYOUT.tar.xz" "/tmp/tail-$TAG.txt"
SWEPT=$OUT/sweep-$TAG-$LAYOUT.json
goodput_paired "$SWEPT" envelope plain eagle3 builtin-adaptive
( cd /tmp && python3 -m adaptive_spec.bench.cli paired "$SWEPT" --system builtin-adaptive \
    --of envelope ) 2>&1 | tail -8
( cd /tmp && python3 -m adaptive_spec.bench.sample_summary --realized \
    "$OUT/samples-$TAG-goodput.txt" ) 2>&1 | tail -30
goodput_cost_model "$SWEPT"
# since session 60: each server's decode and prefill calls apart (ms a call), at the top levels
phases "/tmp/logs-$TAG-$LAYOUT" --bands 60-64,120-128,240-256 --per-call | tail -13
[ "${STACKS:-0}" = 1 ] && stacks "/tmp/logs-$TAG-$LAYOUT" "${STACKS_AT:-127}" | head -60
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$TAG"
