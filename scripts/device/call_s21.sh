#!/usr/bin/env bash
# GPU machine nvidia-h200 (ONE H200: the only kind lent at the start of session 21, 2026-12-01).
#   ks (~8 min) issue 6, then issue 5's step load:
#      1. the sampling verify against SGLang's (kernel schema), B = 1 / 16 / 64 / 256, k = 3,
#         V = 128,256, temperature + top-p, temperature, top-k + top-p, flat logits, with the
#         distribution check on the GPU: this session's top-p shortcuts (a draft at the
#         nucleus edge decided from the first pass; a threshold search stopped by the probe
#         that settles the acceptance) ran on the CPU interpreter only before this call;
#      2. scripts/device/topp_tail_probe.py, 6 input draws (session 20's columns A / E / B / X / T);
#      3. the step load 1 -> 128 -> 1 (plain, goodput) with the follow record (call_s20.sh sl).
#   h5 (~9.5 min) issue 6: where the sampling verify call's host time goes
#      (benchmarks/verify_host_profile.py --op sampling, B = 64: ks measured our top-p call at
#      292 us back to back against 146 us of GPU time); then issue 5's dial-0.5 column
#      (call_s19.sh g5: plain, eagle3, goodput at 1 / 16 / 64 / 256, 2 pairs).
#      h5's profile timed out in its first case (FlashInfer's sampling module built on a fresh
#      machine by SGLang's path, then our kernels' JIT): only SGLang's line came back.
#   h9 (~9.8 min) the profile again with our cases first (SGLang's last), then issue 5's
#      dial-0.9 column (call_s19.sh g9).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s21.sh ks|h5|h9
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
case "${1:-}" in
ks)
  export DEADLINE_S=${DEADLINE_S:-570} ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( cd /tmp && timeout 250 python3 "$REPO/benchmarks/kernel_bench.py" --bs 64,16,256,1 --k 3 \
      --vocab 128256 --ops sampling --no-tune --graph-timing --budget-s 200 \
      --out "$OUT/kernels-sampling.json" 2>&1 | grep -E "rror|wrote|warm-up|chi|check" | head -12 )
  say "kernel bench done"
  ( cd /tmp && timeout 70 python3 "$REPO/scripts/device/topp_tail_probe.py" 6 ) 2>&1 \
    | grep -v -e UserWarning -e "tl.where" | tee "$OUT/topp-tail-probe.txt"
  say "probe done"
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  step_load_follow /tmp/soak-8b logs-ks.tar.xz
  ;;
h5|h9)
  export DEADLINE_S=${DEADLINE_S:-$([ "$1" = h5 ] && echo 575 || echo 590)} ADAPTIVE_SPEC_WARM_SAMPLING=0
  ( cd /tmp && timeout $([ "$1" = h5 ] && echo 110 || echo 140) python3 \
      "$REPO/benchmarks/verify_host_profile.py" --op sampling --bs 64 \
      --calls $([ "$1" = h5 ] && echo 1000 || echo 500) ) 2>&1 \
    | grep -v -e UserWarning -e "tl.where" | tee "$OUT/verify-host-profile-sampling.txt"
  say "host profile done"
  dial=0.${1#?}
  build_pair /tmp/dial-8b "dial:$dial" --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  sweep 0 "g${1#?}-dial" /tmp/dial-8b/target "/tmp/dial-8b/draft-dial-$dial" plain,eagle3,adaptive-spec:goodput \
    --concurrency 1,16,64,256 --repeat 2 --time-budget-s 5 --time-budget-from 256:6 \
    --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput" > "/tmp/tail-g${1#?}.txt"
  report "g${1#?}-" "logs-$1.tar.xz" "/tmp/tail-g${1#?}.txt"
  goodput_cost_model "$OUT"/sweep-g*-dial.json
  ;;
*) echo "usage: call_s21.sh ks|h5|h9"; exit 2 ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
say "done $1"
