#!/usr/bin/env bash
# Session 48 (one GPU, H100 or H200).
#   m1 (~7-9 min on an H100) where goodput loses at one request on the 16-layer Qwen3-MoE layout
#      (session 48: 0.861x of EAGLE-3 and 0.904x of plain; it ran plain, its drafting cell read
#      4.9 ms a step from probes where EAGLE-3's step took 3.97 ms, its plain steps 1.73 ms
#      against the plain server's 1.64): plain, EAGLE-3, drafting forced on (k = 3), forced off
#      and goodput at 1 and 4 requests (CONC), 8-s levels (LEVEL_S), one pass (PASSES), every one
#      of ours logging its step-time samples. Forced on against EAGLE-3 tells whether our
#      drafting step costs more than SGLang's on a step this short (the plugin's host work) or
#      only goodput's probes read it dear (steps right after a switch); forced off against plain
#      the off path's cost there; SGLang's decode lines and our phase lines tell where. On an
#      H100 the servers start one after another (--start-mode serial: five MoE servers do not
#      fit its 80 GB at once, three did in session 48); on an H200 all at once.
#   fs | ms | kd | ...: session 47's and earlier calls (call_s47.sh), on the code as it stands.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s48.sh m1|fs|ms|...
case "${1:-}" in
m1) ;;
*) exec bash scripts/device/call_s47.sh "$@" ;;
esac
PREFILL_GRAPH=${PREFILL_GRAPH:-breakable}  # SGLang's default, which common.sh turns off otherwise
source scripts/device/common.sh
say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"  # RUN_FLAGS add its decision log
PAIR=/tmp/moe-16
pinned_setup m1
build_pair "$PAIR" dial:0.7 --preset qwen3-moe --layers 16 || { tail -30 "$OUT/build.log"; exit 3; }
say "model built"
export ADAPTIVE_SPEC_SAMPLE_LOG=1
GPU_MIB=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
START=parallel; [ "${GPU_MIB:-0}" -lt 100000 ] && START=serial
say "${GPU_MIB} MiB of GPU memory: servers start $START"
FIVE=plain,eagle3,adaptive-spec:forced-on,adaptive-spec:forced-off,adaptive-spec:goodput
sweep 0 m1-moe "$PAIR/target" "$PAIR/draft-dial-0.7" "${SYSTEMS:-$FIVE}" \
  --concurrency "${CONC:-1,4}" --repeat "${PASSES:-1}" --time-budget-s "${LEVEL_S:-8}" \
  --start-mode "$START" --start-timeout-s 360 --system-args "$GOODPUT" > /tmp/tail-m1.txt
keep_ours_logs m1 moe
report m1- logs-m1.tar.xz /tmp/tail-m1.txt
SWEPT=$OUT/sweep-m1-moe.json
goodput_paired "$SWEPT" envelope plain eagle3
for pair in "forced-on eagle3" "forced-off plain"; do
  set -- $pair
  ( cd /tmp && python3 -m adaptive_spec.bench.cli paired "$SWEPT" --system "adaptive-spec:$1" \
      --of "$2" ) 2>&1 | tail -3
done
( cd /tmp && for s in goodput forced-on forced-off; do
    python3 -m adaptive_spec.bench.sample_summary --coverage "$OUT/samples-m1-$s.txt"
  done
  python3 -m adaptive_spec.bench.sample_summary --realized "$OUT/samples-m1-goodput.txt"
  python3 -m adaptive_spec.bench.log_throughput /tmp/logs-m1-moe/server-*.log ) 2>&1 | tail -70
# our phase lines at one running request, per server: where a step's host time goes
grep -H "adaptive_spec phases" /tmp/logs-m1-moe/server-*.log | grep "mean_running=1\.0 " \
  | sed -e 's|.*/server-||' -e 's/calls_per_decode_step.*drafting_steps/drafting_steps/' \
  | cut -c1-400 | head -20
goodput_cost_model "$SWEPT"
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" m1
