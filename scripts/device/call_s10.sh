#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, session 10 (2026-11-30). Session 10 ran call_s9.sh v, g, o and
# call_s6.sh d (results 2026-11-30-s10-*); what it built afterwards has not run on a GPU:
#   k  (~4.5 min cold: the JIT warm-up alone takes ~90 s) the kernels after session 10's
#      host-path work (plain-integer launch arithmetic, cached launch plans, kept scratch buffers: the wrapper's host time fell
#      from 29 to 9 us on the 2-core CPU, wrapper_cost.py) and the one-axis grids (the sampling
#      distribution check's 800,000 rows failed with "invalid argument" on the (slices, rows)
#      grid): B = 1, 16, 64, 256, k = 3, checks on, every row also timed from a CUDA graph
#      (us_graph: GPU time without host launch cost), both GPUs' halves of the grid in parallel.
#   p  (~9 min) the off step under each GPU's half of the host's cores (session 10:
#      forced off 0.918x +-0.036 of plain at 64 requests, 0.924x +-0.046 at 256, 8 pairs):
#      plain vs forced off lean (GPU 0) and plain vs forced off direct (GPU 1), 64 and 256
#      requests, 4 paired repeats each: whether `direct` closes the gap where the host is
#      the limit.
#   g  = call_s9.sh g, again: the goodput table with session 10's settled cells (a longer
#      chain measured faster caps a shorter one's stalled reading).
# Then call_s7.sh f (always-wrong on both MoE layouts, issue 10) and call_s6.sh e (step load +
# dense always-wrong), each followed by `; bash scripts/device/pack_out.sh NAME`.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s10.sh k|p
source scripts/device/common.sh
case "${1:-}" in
k)
  export DEADLINE_S=${DEADLINE_S:-290}
  for g in 0 1; do
    bs=$([ $g = 0 ] && echo 1,16 || echo 64,256)
    ( cd /tmp && CUDA_VISIBLE_DEVICES=$g timeout 270 python3 "$REPO/benchmarks/kernel_bench.py" \
        --bs "$bs" --k 3 --vocab 128256 --no-tune --graph-timing --budget-s 245 \
        --out "$OUT/kernels-host-gpu$g.json" 2>&1 | grep -E "rror|wrote" | head -6 | sed "s/^/[gpu$g] /" ) &
  done
  wait ;;
p)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_two_pairs /tmp/al-8b aligned /tmp/al-8b-b aligned --preset 8b
  PAIRED=(--concurrency 64,256 --repeat 4 --time-budget-s 10 --time-budget-from 128:10)
  sweep 0 off-lean-pinned /tmp/al-8b/target /tmp/al-8b/draft-aligned plain,adaptive-spec:forced-off \
    "${PAIRED[@]}" --system-args "adaptive-spec:forced-off=--adaptive-spec-force off" > /tmp/sweep-p0.txt &
  sweep 1 off-direct-pinned /tmp/al-8b-b/target /tmp/al-8b-b/draft-aligned \
    plain,adaptive-spec:forced-off-direct "${PAIRED[@]}" \
    --system-args "adaptive-spec:forced-off-direct=--adaptive-spec-force off --adaptive-spec-off-path direct" \
    > /tmp/sweep-p1.txt
  wait; grep -h "paired\|lossless" /tmp/sweep-off-*-pinned.txt
  pack_logs logs-p.tar.xz /tmp/logs-off-*-pinned/*.log ;;
*) echo "usage: call_s10.sh k|p (g: call_s9.sh g)"; exit 2 ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
say "done $1"
