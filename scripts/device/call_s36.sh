#!/usr/bin/env bash
# Session 36. One H200. SGLang's defaults (breakable prefill CUDA graphs on every server), dense 8B
# pair, dial 0.7, --stream-interval 4, schedulers pinned, lossless checked per row.
#   pc (~7 min) goodput's choice at 32 / 64 after its plain cell stopped taking the off step a
#      switch on lands in (`Controller._clock_result`): session 36's `sl` (call_s35.sh) found that
#      step's 45 ms (the catch-up's host work), a lone sample in its sync, at the end of plain's
#      run at 64: the cell read 9.1 ms against 5.7 for its other 96 samples. Plain, eagle3,
#      goodput at 32 and 64, 2 passes, the sample log on (ADAPTIVE_SPEC_SAMPLE_LOG=1).
#   hi (~8 min) the busy end and the band's low edge after it: plain, eagle3, goodput at 16, 128
#      and 256, 2 passes.
#   lc (~8 min, written after the session's device minutes ran out, not run) long contexts: plain,
#      eagle3, goodput at 32 and 64 with 1,536-2,560-token prompts (each step reads ~2,200 tokens
#      of KV a request, more bytes than the 8B weights at 64), 2 passes. Does drafting pay at 64
#      there (MagicDec), where it lost at ~200 tokens, and does goodput follow? The table's
#      contexts (`step_context_tokens`) are printed.
#   dl (~9 min, written, not run) the other drafts on SGLang's defaults since the plain-cell fix:
#      plain, eagle3, goodput at 16 and 64 with the dial-0.9 draft, then with the always-wrong
#      one (`random`), 2 passes each.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s36.sh pc|hi|lc|dl
PREFILL_GRAPH=${PREFILL_GRAPH:-breakable}  # SGLang's default, which common.sh turns off otherwise
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
THREE=plain,eagle3,adaptive-spec:goodput

case "${1:-}" in
pc)
  export ADAPTIVE_SPEC_SAMPLE_LOG=1
  dense_pinned_setup $1
  sweep 0 pc-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 $THREE --concurrency 32,64 \
    --repeat 2 --time-budget-s 6 --start-timeout-s 300 --system-args "$GOODPUT" > /tmp/tail-pc.txt
  report pc- logs-pc.tar.xz /tmp/tail-pc.txt
  grep -h "adaptive_spec samples" /tmp/logs-pc-dense/server-adaptive-spec_goodput.log > "$OUT/samples-pc.txt"
  for b in 32 64; do ( cd /tmp && python3 -m adaptive_spec.bench.sample_summary --bucket $b \
      /tmp/logs-pc-dense/server-adaptive-spec_goodput.log ); done
  phases /tmp/logs-pc-dense --bands 48-95,24-47 --max-ms-per-step 40 | tail -8
  goodput_cost_model "$OUT"/sweep-pc-dense.json
  ;;
hi)
  dense_pinned_setup $1
  sweep 0 hi-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 $THREE --concurrency 16,128,256 \
    --repeat 2 --time-budget-s 6 --start-timeout-s 300 --system-args "$GOODPUT" > /tmp/tail-hi.txt
  report hi- logs-hi.tar.xz /tmp/tail-hi.txt
  phases /tmp/logs-hi-dense --bands 160-256,96-159,12-24 --max-ms-per-step 40 | tail -10
  goodput_cost_model "$OUT"/sweep-hi-dense.json
  ;;
lc)
  dense_pinned_setup $1
  sweep 0 lc-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 $THREE --concurrency 32,64 \
    --prompt-len 1536,2560 --repeat 2 --time-budget-s 6 --start-timeout-s 300 \
    --system-args "$GOODPUT" > /tmp/tail-lc.txt
  report lc- logs-lc.tar.xz /tmp/tail-lc.txt
  phases /tmp/logs-lc-dense --bands 48-95,24-47 --max-ms-per-step 80 | tail -8
  goodput_cost_model "$OUT"/sweep-lc-dense.json
  ;;
dl)
  dense_pinned_setup $1
  build_pair /tmp/soak-8b dial:0.9,random --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  for d in dial-0.9 random; do
    sweep 0 dl-$d /tmp/soak-8b/target /tmp/soak-8b/draft-$d $THREE --concurrency 16,64 \
      --repeat 2 --time-budget-s 6 --start-timeout-s 300 --system-args "$GOODPUT" > /tmp/tail-dl-$d.txt
    report dl-$d logs-dl-$d.tar.xz /tmp/tail-dl-$d.txt
    goodput_cost_model "$OUT"/sweep-dl-$d.json
  done
  ;;
*)
  say "usage: $0 pc|hi|lc|dl"; exit 2
  ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
