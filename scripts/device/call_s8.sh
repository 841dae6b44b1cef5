#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, written in session 8 (2026-11-30) for the next session. Each call
# ends with its results under $OUT; issue the next right after (the machine is released after
# 30 s idle). Session 8 ran call_s7.sh b, c (twice: the first found the no-overlap crash), d and
# call_s6.sh f; the kernel grid faulted again (results/2026-11-30-s8-kernel-fault-probe.txt).
#   a  (~5 min) issue 6 end to end, never run: our verify kernels inside the server, forced on,
#      vs SGLang's verify, greedy (GPU 0, outputs vs plain) and temperature 0.7 + top-p 0.9
#      (GPU 1); `triton` (both kernels) and `triton-greedy` (ours for greedy batches only).
#   b  (~4 min) the kernel grid, one process per batch size (a fault loses only its own point),
#      then kernel_bench's B = 256 sequence again under compute-sanitizer where the image has it.
#   c  (~9 min) = call_s7.sh f: always-wrong drafts on both MoE layouts, the four systems (issue 10).
#   d  (~5 min) issue 3: where the off step's host time goes, function by function. The stack
#      sampler (ADAPTIVE_SPEC_STACK_SAMPLER=1, phase clocks included) on plain, forced-off lean
#      and forced-off direct at 1 and 64 requests (GPU 0), and on eagle3 and flapping every 8
#      steps (GPU 1); tables of each server's ms per decode step by function vs plain.
#   e  (~7 min) issue 8: our off path under SGLang settings it never ran with (decode CUDA graphs
#      off, page size 16, chunked prefill of 300-700-token prompts, radix cache off), each set
#      with its own plain server (greedy numerics may differ between settings): flapping every
#      8 steps and forced off vs plain, token for token, at 1 and 16 requests.
#   f  (~8 min) issue 3, first: --adaptive-spec-off-barrier fast (the scheduler waits on the
#      target decode graph's read-done event after an off step, as after a plain decode, not for
#      the whole forward). GPU 0: plain vs forced off lean (coarse), lean fast and direct fast
#      at 64 and 256, 3 paired repeats, phase clocks. GPU 1, lossless under switching with it:
#      flapping every 8 steps and goodput with it, goodput without, vs plain (dial 0.7); then a plain
#      server with SGLang's SGLANG_FORCE_COARSE_WAR_BARRIER=1 (what the coarse wait alone costs).
# Still to run from earlier scripts: call_s6.sh d (the TP = 2 sweep), e (step load + dense
# always-wrong).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s8.sh a|b|c|d|e|f
source scripts/device/common.sh
case "${1:-}" in
a)
  export DEADLINE_S=400
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/soak-8b random,dial:0.7 --preset 8b ) || exit 3
  VERIFY=(--concurrency 1,16,64 --time-budget-s 6
    --system-args "adaptive-spec:on-sglang=--adaptive-spec-force on"
    --system-args "adaptive-spec:on-triton=--adaptive-spec-force on --adaptive-spec-verify-backend triton"
    --system-args "adaptive-spec:on-triton-greedy=--adaptive-spec-force on --adaptive-spec-verify-backend triton-greedy")
  ( export ADAPTIVE_SPEC_WARM_SAMPLING=0
    sweep 0 verify-e2e-greedy /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
      plain,adaptive-spec:on-sglang,adaptive-spec:on-triton "${VERIFY[@]}" > /tmp/sweep-a0.txt ) &
  sweep 1 verify-e2e-top-p /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    adaptive-spec:on-sglang,adaptive-spec:on-triton,adaptive-spec:on-triton-greedy "${VERIFY[@]}" \
    --temperature 0.7 --top-p 0.9 > /tmp/sweep-a1.txt
  wait; cat /tmp/sweep-a0.txt /tmp/sweep-a1.txt
  pack_logs logs-a.tar.xz /tmp/logs-verify-e2e-greedy/*.log /tmp/logs-verify-e2e-top-p/*.log ;;
b)
  cd /tmp
  for bs in 1 64 256; do   # GPU 0, one process per batch size; the Triton cache makes later ones quick
    CUDA_VISIBLE_DEVICES=0 timeout 150 python3 "$REPO/benchmarks/kernel_bench.py" --bs $bs --k 3,7 \
      --vocab 128256 --budget-s 120 --no-checks --out "$OUT/kernels-bs$bs.json" 2>&1 | tail -4
  done &
  if command -v compute-sanitizer >/dev/null; then
    CUDA_VISIBLE_DEVICES=1 timeout 280 compute-sanitizer --tool memcheck --print-limit 20 \
      python3 "$REPO/benchmarks/kernel_bench.py" --bs 256 --k 3 --vocab 128256 --no-tune --no-checks \
      --budget-s 200 --out "$OUT/kernels-sanitizer.json" > "$OUT/sanitizer.txt" 2>&1
  else
    # no sanitizer: bisect which earlier calls the fault needs (one process each, a fault
    # poisons only its own context): flat sampling alone, sampling alone, everything
    echo "compute-sanitizer not on this image; bisecting with kernel_bench --ops/--scenarios" > "$OUT/sanitizer.txt"
    for sel in "--ops sampling --scenarios flat" "--ops sampling" "--ops greedy,sampling"; do
      CUDA_LAUNCH_BLOCKING=1 CUDA_VISIBLE_DEVICES=1 timeout 120 python3 "$REPO/benchmarks/kernel_bench.py" \
        --bs 256 --k 3 --vocab 128256 --no-tune --no-checks --budget-s 90 $sel \
        --out "$OUT/kernels-bisect-${sel//[^a-z]/}.json" 2>&1 | grep -E "ERROR|wrote" | head -3 \
        | sed "s/^/[$sel] /" >> "$OUT/sanitizer.txt"
    done
  fi
  wait; grep -v "^\s*$" "$OUT/sanitizer.txt" | head -60 ;;
c)
  cd "$REPO" && bash scripts/device/call_s7.sh f ;;
d)
  export DEADLINE_S=330 ADAPTIVE_SPEC_STACK_SAMPLER=1 ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/al-8b aligned --preset 8b ) || exit 3
  STACK=(--concurrency 1,64 --time-budget-s 8)
  sweep 0 stacks-off /tmp/al-8b/target /tmp/al-8b/draft-aligned \
    plain,adaptive-spec:forced-off-lean,adaptive-spec:forced-off-direct "${STACK[@]}" \
    --system-args "adaptive-spec:forced-off-lean=--adaptive-spec-force off" \
    --system-args "adaptive-spec:forced-off-direct=--adaptive-spec-force off --adaptive-spec-off-path direct" \
    > /tmp/sweep-d0.txt &
  sweep 1 stacks-spec /tmp/al-8b/target /tmp/al-8b/draft-aligned plain,eagle3,adaptive-spec:flap8 "${STACK[@]}" \
    --system-args "adaptive-spec:flap8=--adaptive-spec-force flap:8" > /tmp/sweep-d1.txt
  wait; cat /tmp/sweep-d0.txt /tmp/sweep-d1.txt
  for n in 1 64; do stacks /tmp/logs-stacks-off $n; stacks /tmp/logs-stacks-spec $n; done > /dev/null
  head -45 "$OUT/stacks-stacks-off-near64.txt"
  phases /tmp/logs-stacks-off > /dev/null
  pack_logs logs-d.tar.xz /tmp/logs-stacks-off/*.log /tmp/logs-stacks-spec/*.log ;;
e)
  export DEADLINE_S=440 ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/soak-8b random,dial:0.7 --preset 8b ) || exit 3
  COMPAT=(plain,adaptive-spec:flap8,adaptive-spec:forced-off --concurrency 1,16 --time-budget-s 5
    --system-args "adaptive-spec:flap8=--adaptive-spec-force flap:8"
    --system-args "adaptive-spec:forced-off=--adaptive-spec-force off")
  compat() {  # $1 GPU, $2 name, rest: the settings (for every server of the sweep)
    local gpu=$1 name=$2; shift 2
    sweep "$gpu" "compat-$name" /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 "${COMPAT[@]}" "$@" \
      > "/tmp/sweep-e-$name.txt"
  }
  # the first pair within 200 s (a later --deadline-s wins), so the second has its share
  compat 0 no-graphs --server-arg "--cuda-graph-backend-decode disabled" --deadline-s 200 &
  compat 1 page16 --server-arg "--page-size 16" --deadline-s 200
  wait
  compat 0 chunked --server-arg "--chunked-prefill-size 256" --prompt-len 300,700 &
  compat 1 no-radix --server-arg=--disable-radix-cache
  wait
  for n in no-graphs page16 chunked no-radix; do
    echo "== $n"; grep -E "lossless|FAILED|rror|skipped" "/tmp/sweep-e-$n.txt" | head -6
  done
  pack_logs logs-e.tar.xz /tmp/logs-compat-*/*.log ;;
f)
  export DEADLINE_S=470 ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_two_pairs /tmp/al-8b aligned /tmp/soak-8b random,dial:0.7 --preset 8b
  ( export ADAPTIVE_SPEC_PHASE_TIMING=1
    sweep 0 off-barrier /tmp/al-8b/target /tmp/al-8b/draft-aligned \
      plain,adaptive-spec:off-lean,adaptive-spec:off-lean-fast,adaptive-spec:off-direct-fast \
      --concurrency 64,256 --repeat 3 --time-budget-s 8 --time-budget-from 128:8 \
      --system-args "adaptive-spec:off-lean=--adaptive-spec-force off" \
      --system-args "adaptive-spec:off-lean-fast=--adaptive-spec-force off --adaptive-spec-off-barrier fast" \
      --system-args "adaptive-spec:off-direct-fast=--adaptive-spec-force off --adaptive-spec-off-path direct --adaptive-spec-off-barrier fast" \
      > /tmp/sweep-f0.txt ) &
  sweep 1 off-barrier-switching /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,adaptive-spec:goodput,adaptive-spec:goodput-fast,adaptive-spec:flap8-fast \
    --concurrency 16,64,128 --time-budget-s 6 \
    --system-args "adaptive-spec:flap8-fast=--adaptive-spec-force flap:8 --adaptive-spec-off-barrier fast" \
    --system-args "adaptive-spec:goodput-fast=--adaptive-spec-policy goodput --adaptive-spec-off-barrier fast" \
    --deadline-s 260 > /tmp/sweep-f1.txt
  # then GPU 1: how much the coarse barrier alone costs a plain server (SGLang's own switch,
  # environ.py); compare with GPU 0's plain at the same levels (same time, other GPU)
  ( export SGLANG_FORCE_COARSE_WAR_BARRIER=1
    sweep 1 plain-coarse-barrier /tmp/al-8b/target /tmp/al-8b/draft-aligned plain \
      --concurrency 64,256 --repeat 3 --time-budget-s 8 --time-budget-from 128:8 > /tmp/sweep-f2.txt )
  wait; cat /tmp/sweep-f0.txt /tmp/sweep-f1.txt /tmp/sweep-f2.txt
  phases /tmp/logs-off-barrier > /dev/null
  pack_logs logs-f.tar.xz /tmp/logs-off-barrier/*.log /tmp/logs-off-barrier-switching/*.log \
    /tmp/logs-plain-coarse-barrier/*.log ;;
*) echo "usage: call_s8.sh a|b|c|d|e|f"; exit 2 ;;
esac
rm -f "$OUT/build.log"
say "done $1"
