#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, session 11 (2026-11-30). Session 11 ran call_s10.sh k and p,
# call_s9.sh g and call_s7.sh f (results 2026-11-30-s11-*); this checks what it built after:
#   k  (~4 min cold: the JIT warm-up alone takes ~90 s) the kernels with top-p's residual token
#      drawn by rejection (two passes over a row instead of the nucleus threshold search) and
#      the direct Triton launch (kernels/launch.py): B = 64 and 16, k = 3, V = 128256, every
#      row also timed from a CUDA graph (us_graph); GPU 0 launches direct and runs the checks
#      (the sampling distribution check covers the rejection draw), GPU 1 launches through the
#      JIT (ADAPTIVE_SPEC_TRITON_LAUNCH=jit): the same rows, so the two files compare the launch.
#   h  (~1.5 min, not run yet) where a greedy verify call's host time goes
#      (benchmarks/verify_host_profile.py: per-call times of SGLang's path, ours and the pieces
#      of ours, and cProfile's top entries) at B = 64 and 16, k = 3.
#   s  (~6 min, not run yet) the first server on the top-p rejection path: plain, our server
#      drafting on with SGLang's verify and with ours, 1 and 64 requests, temperature 0.7,
#      top-p 0.9 (the sweep checks losslessness only for greedy workloads; here it compares
#      throughput; FlashInfer's sampling module is built while our servers start).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s11.sh k|h|s
source scripts/device/common.sh
case "${1:-}" in
k)
  export DEADLINE_S=${DEADLINE_S:-240}
  for g in 0 1; do
    mode=$([ $g = 0 ] && echo direct || echo jit)
    checks=$([ $g = 0 ] || echo --no-checks)
    ( cd /tmp && CUDA_VISIBLE_DEVICES=$g ADAPTIVE_SPEC_TRITON_LAUNCH=$mode timeout 215 python3 \
        "$REPO/benchmarks/kernel_bench.py" --bs 64,16 --k 3 --vocab 128256 --no-tune \
        --graph-timing --budget-s 185 $checks --out "$OUT/kernels-$mode-gpu$g.json" 2>&1 \
        | grep -E "rror|wrote|warm-up" | head -8 | sed "s/^/[gpu$g $mode] /" ) &
  done
  wait ;;
h)
  export DEADLINE_S=${DEADLINE_S:-120}
  for bs in 64 16; do
    timeout 50 python3 "$REPO/benchmarks/verify_host_profile.py" --bs $bs --k 3 \
      > "$OUT/verify-host-profile-bs$bs.txt" 2>&1
    head -8 "$OUT/verify-host-profile-bs$bs.txt"
  done ;;
s)
  export DEADLINE_S=${DEADLINE_S:-400}
  ( export CUDA_VISIBLE_DEVICES=0; build_pair /tmp/soak-8b dial:0.7 --preset 8b ) || exit 3
  sweep 0 verify-topp /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,adaptive-spec:on-sglang,adaptive-spec:on-triton --concurrency 1,64 --time-budget-s 5 \
    --temperature 0.7 --top-p 0.9 \
    --system-args "adaptive-spec:on-sglang=--adaptive-spec-force on" \
    --system-args "adaptive-spec:on-triton=--adaptive-spec-force on --adaptive-spec-verify-backend triton"
  pack_logs logs-s.tar.xz /tmp/logs-verify-topp/*.log ;;
*) echo "usage: call_s11.sh k|h|s"; exit 2 ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
say "done $1"
