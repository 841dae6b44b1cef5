#!/usr/bin/env bash
# Session 40. One GPU (H100 or H200: every system of a call runs in the same run), SGLang's
# defaults (breakable prefill CUDA graphs on every server), dense 8B pair, dial 0.7,
# --stream-interval 4, schedulers pinned, lossless checked per row.
#   rc (~6 min) where the cost model's parts tie k = 3 with plain and plain wins (session 40's
#      `call_s39.sh fo` on an H100: goodput drafted k = 3 at 64 requests on such a tie and made
#      0.92x of plain): plain, eagle3 (3 steps), goodput (what each k delivered counted,
#      policy/realized.py: the default) and goodput-parts (`--adaptive-spec-goodput-model parts`,
#      the model's parts alone, as before) at 48 and 64, 2 passes, the goodput server's samples
#      logged. Read with `adaptive-spec-bench paired FILE --system adaptive-spec:goodput --of
#      envelope` (and `--of adaptive-spec:goodput-parts`), the status's `realized_ratio` and
#      `python -m adaptive_spec.bench.sample_summary --realized samples-rc.txt` (what each k
#      delivered per bucket, prefills counted, from the goodput server's own results).
#   rs (~8 min) the same change where drafting wins (4, 16), in the crossover band (32) and where
#      plain wins by far (128): plain, eagle3 and goodput, 2 passes.
#   fo | busy | be | be64 | l64 | k7 | k9 | kb | lc | dl: session 37's to 39's calls.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s40.sh rc|rs|...
case "${1:-}" in
fo|busy|be|be64|l64|k7|k9|kb|lc|dl) exec bash scripts/device/call_s39.sh "$1" ;;
esac
PREFILL_GRAPH=${PREFILL_GRAPH:-breakable}  # SGLang's default, which common.sh turns off otherwise
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
PARTS="adaptive-spec:goodput-parts=--adaptive-spec-policy goodput --adaptive-spec-goodput-model parts"

case "${1:-}" in
rc)
  dense_pinned_setup $1
  export ADAPTIVE_SPEC_SAMPLE_LOG=1
  sweep 0 rc-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput,adaptive-spec:goodput-parts --concurrency 48,64 \
    --repeat 2 --time-budget-s 6 --start-timeout-s 360 --system-args "$GOODPUT" \
    --system-args "$PARTS" > /tmp/tail-rc.txt
  grep -h "adaptive_spec samples" /tmp/logs-rc-dense/server-adaptive-spec_goodput.log \
    > "$OUT/samples-rc.txt"
  report rc- logs-rc.tar.xz /tmp/tail-rc.txt
  ( cd /tmp && python3 -m adaptive_spec.bench.sample_summary --realized "$OUT/samples-rc.txt" )
  goodput_paired "$OUT"/sweep-rc-dense.json envelope adaptive-spec:goodput-parts
  ( cd /tmp && python3 -m adaptive_spec.bench.cli paired "$OUT"/sweep-rc-dense.json \
      --system adaptive-spec:goodput-parts --of envelope )
  goodput_cost_model "$OUT"/sweep-rc-dense.json
  ;;
rs)
  dense_pinned_setup $1
  sweep 0 rs-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput --concurrency 4,16,32,128 --repeat 2 --time-budget-s 6 \
    --start-timeout-s 360 --system-args "$GOODPUT" > /tmp/tail-rs.txt
  report rs- logs-rs.tar.xz /tmp/tail-rs.txt
  goodput_paired "$OUT"/sweep-rs-dense.json envelope
  goodput_cost_model "$OUT"/sweep-rs-dense.json
  ;;
*)
  say "usage: $0 rc|rs|fo|busy|be|be64|l64|k7|k9|kb|lc|dl"; exit 2
  ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
