#!/usr/bin/env bash
# Session 25. One H200 each:
#   kh (~7 min) issue 6's per-call time after the host-path change (a launch plan per shape,
#      the work buffers in one lookup, `DirectLauncher.planned`: no per-argument key): where a
#      greedy call's host time goes at B = 1 and 64 (verify_host_profile.py, with the launcher
#      alone as the floor), then session 22's kg, the whole grid against SGLang's path per call
#      and by GPU time, our kernels launched both ways (session 23: greedy 0.77-0.82x per call
#      at B = 64, k = 3, V = 128,256 while 2.03x on the GPU).
#   kv (~9 min) issue 6 after kh (which found the direct launch had never run: Triton 3.6's
#      hooks are never None) with the direct launch the default and Triton 3.6's C launch
#      called below its Python wrapper: the host profile at B = 1 / 64, the whole grid with
#      the JIT as "triton" and the direct launch as "triton-direct" (plus us_stream, calls back
#      to back), then end to end: plain, drafting forced on with SGLang's verify and with ours
#      at 1 / 64 requests, dial 0.7, greedy, 2 paired repeats (session 10's last: 1.004x /
#      1.084x, outputs identical).
#   b1 (~5 min) issue 5's ">= 2x SGLang's built-in adaptive mode at 128 / 256" (session 15, one
#      pass: 1.90x / 2.15x; session 23's bx left no files): plain, built-in, goodput at 256 / 128,
#      dial 0.7, one pass (BX_REPEAT for more).
#   bg (~4 min) b1 cut to what the session's last device minutes hold: built-in and goodput only
#      (no plain), 256 then 128 requests, one pass; the sweep's deadline drops what does not fit.
#      Session 25: the machine was taken back mid-run, no files; b1 has not run.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s25.sh kh|kv|b1|bg
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
kv)
  export DEADLINE_S=${DEADLINE_S:-575} ADAPTIVE_SPEC_WARM_SAMPLING=0
  for bs in 1 64; do
    ( cd /tmp && timeout 60 python3 "$REPO/benchmarks/verify_host_profile.py" --bs $bs --k 3 \
        --calls 2000 > "$OUT/host-greedy-bs$bs.txt" 2>&1 )
    say "host profile B = $bs: rc $?"; head -12 "$OUT/host-greedy-bs$bs.txt" | tail -11
  done
  ( cd /tmp && ADAPTIVE_SPEC_TRITON_LAUNCH=jit timeout 200 python3 "$REPO/benchmarks/kernel_bench.py" \
      --no-tune --graph-timing --direct --budget-s 180 --out "$OUT/kernels-grid.json" 2>&1 \
      | grep -E "rror|wrote|warm-up" | tail -10 )
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  sweep 0 verify-e2e /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,adaptive-spec:on-sglang,adaptive-spec:on-triton --concurrency 1,64 --repeat 2 \
    --time-budget-s 5 --system-args "adaptive-spec:on-sglang=--adaptive-spec-force on" \
    --system-args "adaptive-spec:on-triton=--adaptive-spec-force on --adaptive-spec-verify-backend triton" \
    > /tmp/tail-ve.txt
  report verify-e2e logs-ve.tar.xz /tmp/tail-ve.txt
  ;;
b1)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  sweep 0 bx-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,builtin-adaptive,adaptive-spec:goodput --concurrency 256,128 --repeat ${BX_REPEAT:-1} \
    --time-budget-s 6 --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput" > /tmp/tail-bx.txt
  report bx- logs-bx.tar.xz /tmp/tail-bx.txt
  ;;
bg)
  export DEADLINE_S=${DEADLINE_S:-255} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  sweep 0 bg-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    builtin-adaptive,adaptive-spec:goodput --concurrency 256,128 --time-budget-s 6 \
    --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput" > /tmp/tail-bg.txt
  report bg- logs-bg.tar.xz /tmp/tail-bg.txt
  ;;
*)
  say "usage: $0 kh|kv|b1|bg"; exit 2
  ;;
esac
