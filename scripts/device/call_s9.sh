#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, session 9 (2026-11-30). Session 9 ran call_s8.sh f, a, d, e and a
# kernel bisection that found the cause of the Triton verify faults (kernels/chain_verify.py
# _uniform_read). Results come back as one tarball plus run.log ($OUT keeps few files).
#   v  (~5 min) the fix, on the GPU: GPU 0 runs kernel_bench's faulting case (sampling, flat
#      N(0,1) logits, B = 256, k = 3 and 7) three times, then B = 64 (k = 3, 7) with the checks
#      and the launch sweep, which times the greedy kernel's new "rows" schedule against the
#      old "chain" one and ends on B = 256 sampling, then both kernels at B = 256 under
#      compute-sanitizer's synccheck (divergent barriers); GPU 1 serves greedy requests through our
#      verify kernels (the server that crashed with a device-side assert in call_s8.sh a) and
#      through SGLang's, next to plain, at 1 and 64 requests, outputs compared.
#   g  (~8 min) issue 5's table with session 9's goodput policy (a smaller batch's cost ratio
#      bounds the probes of a larger one): plain, eagle3, builtin-adaptive and goodput at
#      N = 1..256 on the dial-0.7 pair (GPU 0) and the dial-0.5 pair (GPU 1), every greedy
#      output compared with plain's.
#   o  (~9 min) issue 3's off-step claim with a tighter interval: plain vs forced off (lean, the
#      default) at 64, 128 and 256 requests, 4 paired repeats of 10-s levels on each GPU (two
#      replicate runs side by side, each on its own half of the host's cores): 8 pairs per N,
#      14 with sessions 8-9's 6 (which gave +-0.11), pooled by `adaptive-spec-bench paired`.
# Then, from earlier scripts: call_s6.sh d (TP = 2 sweep, issue 9), call_s7.sh f (always-wrong on
# both MoE layouts, issue 10), call_s6.sh e (step load + dense always-wrong). Those do not pack
# their results: end such a command with `; bash scripts/device/pack_out.sh NAME` (at most 8
# files come back).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s9.sh v|g|o
source scripts/device/common.sh
case "${1:-}" in
v)
  export DEADLINE_S=${DEADLINE_S:-300} ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( cd /tmp
    for r in 1 2 3; do
      CUDA_VISIBLE_DEVICES=0 timeout 60 python3 "$REPO/benchmarks/kernel_bench.py" --bs 256 --k 3,7 \
        --vocab 128256 --no-tune --no-checks --budget-s 45 --ops sampling --scenarios flat \
        --out "$OUT/kernels-flat256-r$r.json" 2>&1 | grep -E "ERROR|wrote" | head -4 | sed "s/^/[flat r$r] /"
    done
    CUDA_VISIBLE_DEVICES=0 timeout 170 python3 "$REPO/benchmarks/kernel_bench.py" --bs 64 --k 3,7 \
      --vocab 128256 --budget-s 150 --out "$OUT/kernels-bs64.json" 2>&1 \
      | grep -E "ERROR|wrote" | head -4 | sed "s/^/[bs64] /"
    # compute-sanitizer's synccheck reports barriers that not every thread of a block reaches:
    # the race's symptom, so it should be silent now (memcheck was, before the fix too)
    if command -v compute-sanitizer >/dev/null; then
      CUDA_VISIBLE_DEVICES=0 timeout 100 compute-sanitizer --tool synccheck --print-limit 10 \
        python3 "$REPO/benchmarks/kernel_bench.py" --bs 256 --k 3 --vocab 128256 --no-tune \
        --no-checks --budget-s 80 --ops greedy,sampling --out "$OUT/kernels-synccheck.json" \
        > "$OUT/synccheck.txt" 2>&1
      grep -E "ERROR SUMMARY|Barrier|divergent" "$OUT/synccheck.txt" | head -5 | sed "s/^/[synccheck] /"
    fi ) > /tmp/kern-v.txt 2>&1 &
  ( export CUDA_VISIBLE_DEVICES=1; build_pair /tmp/soak-8b random,dial:0.7 --preset 8b ) || exit 3
  # issue 6's end-to-end table: our verify vs SGLang's at 1 and 64 requests, outputs vs plain
  sweep 1 verify-fix /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,adaptive-spec:on-sglang,adaptive-spec:on-triton --concurrency 1,64 --time-budget-s 5 \
    --system-args "adaptive-spec:on-sglang=--adaptive-spec-force on" \
    --system-args "adaptive-spec:on-triton=--adaptive-spec-force on --adaptive-spec-verify-backend triton"
  wait; cat /tmp/kern-v.txt
  pack_logs logs-v.tar.xz /tmp/logs-verify-fix/*.log ;;
g)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_two_pairs /tmp/soak-8b random,dial:0.7 /tmp/d5-8b dial:0.5 --preset 8b
  sweep 0 goodput-dial-0.7 /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 "$FOUR" > /tmp/sweep-g0.txt &
  sweep 1 goodput-dial-0.5 /tmp/d5-8b/target /tmp/d5-8b/draft-dial-0.5 "$FOUR" > /tmp/sweep-g1.txt
  wait; cat /tmp/sweep-g0.txt /tmp/sweep-g1.txt
  pack_logs logs-g.tar.xz /tmp/logs-goodput-dial-*/*.log ;;
o)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_two_pairs /tmp/al-8b aligned /tmp/al-8b-b aligned --preset 8b
  OFF=(plain,adaptive-spec:forced-off --concurrency 64,128,256 --repeat 4 --time-budget-s 10
    --time-budget-from 128:10 --system-args "adaptive-spec:forced-off=--adaptive-spec-force off")
  sweep 0 off-paired-a /tmp/al-8b/target /tmp/al-8b/draft-aligned "${OFF[@]}" > /tmp/sweep-o0.txt &
  sweep 1 off-paired-b /tmp/al-8b-b/target /tmp/al-8b-b/draft-aligned "${OFF[@]}" > /tmp/sweep-o1.txt
  wait; grep -h "paired\|lossless" /tmp/sweep-off-paired-*.txt
  pack_logs logs-o.tar.xz /tmp/logs-off-paired-*/*.log ;;
*) echo "usage: call_s9.sh v|g|o"; exit 2 ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
say "done $1"
