#!/usr/bin/env bash
# Session 25. One H200 each:
#   kh (~7 min) issue 6's per-call time after the host-path change (a launch plan per shape,
#      the work buffers in one lookup, `DirectLauncher.planned`: no per-argument key): where a
#      greedy call's host time goes at B = 1 and 64 (verify_host_profile.py, with the launcher
#      alone as the floor), then session 22's kg, the whole grid against SGLang's path per call
#      and by GPU time, our kernels launched both ways (session 23: greedy 0.77-0.82x per call
#      at B = 64, k = 3, V = 128,256 while 2.03x on the GPU).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s25.sh kh
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
case "${1:-}" in
kh)
  export DEADLINE_S=${DEADLINE_S:-570}
  for bs in 1 64; do
    ( cd /tmp && timeout 80 python3 "$REPO/benchmarks/verify_host_profile.py" --bs $bs --k 3 \
        --calls 2000 > "$OUT/host-greedy-bs$bs.txt" 2>&1 )
    say "host profile B = $bs: rc $?"; head -14 "$OUT/host-greedy-bs$bs.txt"
  done
  ( cd /tmp && timeout $(( $(left) - 25 )) python3 "$REPO/benchmarks/kernel_bench.py" --no-tune \
      --graph-timing --direct --budget-s $(( $(left) - 60 )) --out "$OUT/kernels-grid.json" 2>&1 \
      | grep -E "rror|wrote|warm-up|done" | tail -40 )
  ;;
*)
  say "usage: $0 kh"; exit 2
  ;;
esac
