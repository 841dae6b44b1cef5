#!/usr/bin/env bash
# Session 44 (one GPU, H100 or H200).
#   lv (~5 min; written in session 44 after its device time ran out, not run yet) session 39's
#      `fo` (plain, drafting forced off, goodput at 64 requests, separate servers) with 20-s
#      levels (LEVEL_S) instead of 6, one pass (PASSES): on an H100 goodput read 0.950x /
#      0.960x of plain at 64 with 6-s levels (session 44, `r64`, `fo`), arriving drafting from
#      the drain before each level and settling on plain 3.1-5.1 s into it, where forced off
#      read 0.998x of plain and goodput held at 64 read 1.009x of forced off (`il`). Longer
#      levels spread that start. Then the stays' arrivals (`sample_summary --arrivals`), what
#      each k delivered, and the decision lines, which now end with the cost model's goodput per
#      k over plain's and what held a better k back (`GoodputPolicy.decision_basis`).
#   il | sv | ds | r64 | rc | rs | fo | ...: sessions 37-43's calls.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s44.sh lv|il|...
case "${1:-}" in
lv) ;;
*) exec bash scripts/device/call_s43.sh "$@" ;;
esac
PREFILL_GRAPH=${PREFILL_GRAPH:-breakable}  # SGLang's default, which common.sh turns off otherwise
source scripts/device/common.sh
say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
dense_pinned_setup lv
export ADAPTIVE_SPEC_SAMPLE_LOG=1
sweep 0 lv-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
  plain,adaptive-spec:forced-off,adaptive-spec:goodput --concurrency "${CONC:-64}" \
  --repeat "${PASSES:-1}" --time-budget-s "${LEVEL_S:-20}" --time-budget-from "${CONC:-64}:${LEVEL_S:-20}" \
  --start-timeout-s 300 --system-args "$GOODPUT" \
  --system-args "adaptive-spec:forced-off=--adaptive-spec-force off" > /tmp/tail-lv.txt
grep -h "adaptive_spec samples" /tmp/logs-lv-dense/server-adaptive-spec_goodput.log \
  > "$OUT/samples-lv.txt" 2> /dev/null
grep -h "adaptive_spec decision" /tmp/logs-lv-dense/server-adaptive-spec_goodput.log | tail -150 \
  > "$OUT/decisions-lv.log" 2> /dev/null
report lv- logs-lv.tar.xz /tmp/tail-lv.txt
( cd /tmp && python3 -m adaptive_spec.bench.cli paired "$OUT"/sweep-lv-dense.json \
    --system adaptive-spec:goodput --of plain; python3 -m adaptive_spec.bench.cli paired \
    "$OUT"/sweep-lv-dense.json --system adaptive-spec:forced-off --of plain ) 2>&1 | tail -4
( cd /tmp && python3 -m adaptive_spec.bench.sample_summary --arrivals "$OUT/samples-lv.txt"
  python3 -m adaptive_spec.bench.sample_summary --realized "$OUT/samples-lv.txt" ) 2>&1 | tail -30
goodput_cost_model "$OUT"/sweep-lv-dense.json
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" lv
