#!/usr/bin/env bash
# Session 32. One H200 each. Every server's scheduler is CPU-bound at 128-256 requests (1.00 of
# a core in every row of sessions 28-31) and each server's sat on a vCPU of its own for a whole
# run (plain on 6-8 and goodput on 15 in every repeat of fb): a slower vCPU biases all of a
# run's pairs alike. Each mode first times every vCPU (core_speed.py, before and after), then
# pins every server's scheduler to the same two vCPUs, the fastest two of the probe
# (`--pin-scheduler-cpus`, benchmarks/cpu_pin.py).
#   pa (~9 min) issue 5 at 128 / 256: plain and goodput alone (no built-in server to leave work
#      behind, eagle3 under plain there in every run since session 26), dense 8B pair, dial
#      0.7, --stream-interval 4, 8 passes: goodput / plain with the scheduler pinned.
#   pp (~8 min) pa's finding at 128: goodput's off steps cost 16.09 ms a step against plain's
#      14.94 at 96-159 running (0.922x over 8 pairs, every steady decision plain in 7 of them),
#      equal at 160-256. Plain, forced off and goodput at 128, the same pair and pin, 4
#      passes, and a torch profile of each under the same load after its first pass
#      (`--profile-at 128`, 40 steps): GPU time per step against host time.
#   ps (~5 min) where pp's deficit sits, function by function: forced off made 0.954x of plain at
#      128 (4 pairs, every step plain), its steps 13.14 ms against plain's 12.19 with 0.387
#      prefills a step against 0.350; the profile put both servers' GPU at 35% busy (host-bound)
#      with equal GPU work. Plain and forced off at 128 with the stack sampler
#      (ADAPTIVE_SPEC_STACK_SAMPLER=1, 1-s windows), the same pair and pin, 3 passes.
#   pc (~7 min) issue 5's crossover band (not measured since session 26): plain, eagle3 and
#      goodput at 32 / 64, the same pair and pin, 4 passes.
#   pm (~7 min) issue 10 at 16: the MoE layout, dial 0.7, plain, eagle3 and goodput at 4 / 16,
#      pinned, empty caches, 3 passes.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s32.sh pa|pp|ps|pc|pm
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"

case "${1:-}" in
pa|pc|pp|ps)
  if [ "$1" = ps ]; then export ADAPTIVE_SPEC_STACK_SAMPLER=1; fi
  dense_pinned_setup $1
  if [ "$1" = pa ]; then
    sweep 0 pa-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 plain,adaptive-spec:goodput \
      --concurrency 128,256 --repeat 8 --time-budget-s 6 --system-args "$GOODPUT" > /tmp/tail-pa.txt
  elif [ "$1" = ps ]; then
    sweep 0 ps-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 plain,adaptive-spec:forced-off \
      --concurrency 128 --repeat 3 --time-budget-s 6 \
      --system-args "adaptive-spec:forced-off=--adaptive-spec-force off" > /tmp/tail-ps.txt
    stacks /tmp/logs-ps-dense 110 | head -40
  elif [ "$1" = pp ]; then
    sweep 0 pp-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
      plain,adaptive-spec:forced-off,adaptive-spec:goodput --concurrency 128 --repeat 4 \
      --time-budget-s 6 --profile-at 128 --profile-steps 40 \
      --system-args "$GOODPUT" --system-args "adaptive-spec:forced-off=--adaptive-spec-force off" > /tmp/tail-pp.txt
    python3 -c "import json,sys; [print(r['system'], r['concurrency'], r.get('repeat'), json.dumps(r.get('profile'))[:3000]) for r in json.load(open(sys.argv[1]))['rows'] if r.get('profile')]" "$OUT"/sweep-pp-dense.json
  else
    sweep 0 pc-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 plain,eagle3,adaptive-spec:goodput \
      --concurrency 32,64 --repeat 4 --time-budget-s 6 --system-args "$GOODPUT" > /tmp/tail-pc.txt
  fi
  report $1- logs-$1.tar.xz /tmp/tail-$1.txt
  phases /tmp/logs-$1-dense --bands 160-256,96-159,48-95,24-47 | tail -12
  goodput_cost_model "$OUT"/sweep-$1-dense.json
  core_probe $1-after > /dev/null
  ;;
pm)
  export DEADLINE_S=${DEADLINE_S:-540} ADAPTIVE_SPEC_WARM_SAMPLING=0
  export TRITON_CACHE_DIR=/tmp/jit-mq/triton TVM_FFI_CACHE_DIR=/tmp/jit-mq/tvm-ffi
  rm -rf /tmp/jit-mq; mkdir -p "$TRITON_CACHE_DIR" "$TVM_FFI_CACHE_DIR"
  PIN=$(core_probe pm-before); say "pinning schedulers to vCPUs $PIN"
  build_pair /tmp/moe-16 dial:0.7 --preset qwen3-moe --layers 16 || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  RUN_FLAGS+=(--start-timeout-s 360 --pin-scheduler-cpus "$PIN")
  sweep 0 pm-moe-dial-0.7 /tmp/moe-16/target /tmp/moe-16/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput --concurrency 4,16 --repeat 3 --time-budget-s 6 \
    --system-args "$GOODPUT" > /tmp/tail-pm.txt
  report pm- logs-pm.tar.xz /tmp/tail-pm.txt
  goodput_cost_model "$OUT"/sweep-pm-moe-dial-0.7.json
  core_probe pm-after > /dev/null
  ;;
*)
  say "usage: $0 pa|pp|ps|pc|pm"; exit 2
  ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
