#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, session 9 (2026-11-30). Session 9 ran call_s8.sh f, a, d, e and a
# kernel bisection that found the cause of the Triton verify faults (kernels/chain_verify.py
# _uniform_read). Results come back as one tarball plus run.log ($OUT keeps few files).
#   v  (~4 min) the fix, on the GPU: GPU 0 runs kernel_bench's faulting case (sampling, flat
#      N(0,1) logits, B = 256, k = 3 and 7) three times, then B = 64 (k = 3, 7) with the checks
#      and the launch sweep, which times the greedy kernel's new "rows" schedule against the
#      old "chain" one and ends on B = 256 sampling; GPU 1 serves greedy requests through our
#      verify kernels (the server that crashed with a device-side assert in call_s8.sh a) next
#      to plain, outputs compared.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s9.sh v
source scripts/device/common.sh
case "${1:-}" in
v)
  export DEADLINE_S=${DEADLINE_S:-230} ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( cd /tmp
    for r in 1 2 3; do
      CUDA_VISIBLE_DEVICES=0 timeout 60 python3 "$REPO/benchmarks/kernel_bench.py" --bs 256 --k 3,7 \
        --vocab 128256 --no-tune --no-checks --budget-s 45 --ops sampling --scenarios flat \
        --out "$OUT/kernels-flat256-r$r.json" 2>&1 | grep -E "ERROR|wrote" | head -4 | sed "s/^/[flat r$r] /"
    done
    CUDA_VISIBLE_DEVICES=0 timeout 170 python3 "$REPO/benchmarks/kernel_bench.py" --bs 64 --k 3,7 \
      --vocab 128256 --budget-s 150 --out "$OUT/kernels-bs64.json" 2>&1 \
      | grep -E "ERROR|wrote" | head -4 | sed "s/^/[bs64] /" ) > /tmp/kern-v.txt 2>&1 &
  ( export CUDA_VISIBLE_DEVICES=1; build_pair /tmp/soak-8b random,dial:0.7 --preset 8b ) || exit 3
  sweep 1 verify-fix /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 plain,adaptive-spec:on-triton \
    --concurrency 16,64 --time-budget-s 5 \
    --system-args "adaptive-spec:on-triton=--adaptive-spec-force on --adaptive-spec-verify-backend triton"
  wait; cat /tmp/kern-v.txt
  pack_logs logs-v.tar.xz /tmp/logs-verify-fix/*.log ;;
*) echo "usage: call_s9.sh v"; exit 2 ;;
esac
rm -f "$OUT/build.log"
( cd "$OUT" && tar cJf "results-$1.tar.xz" --remove-files $(ls | grep -v -e '^run.log$' -e '^logs-') )
say "done $1"
