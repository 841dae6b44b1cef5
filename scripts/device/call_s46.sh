#!/usr/bin/env bash
# Session 46 (one GPU, H100 or H200).
#   kd (~5 min) session 45's `lv` after the prefill term prices each prefill kind at its own
#      cost (policy/prefill_load.py, "A prefill's kind"): goodput, forced on (k = 3) and forced
#      off at 32 and 64 requests (CONC), separate servers, 15-s levels (LEVEL_S), one pass
#      (PASSES), step-time samples logged; three servers (four ran out of an H100's memory).
#      Before the change (session 46's `lv`, H100, 64 requests): goodput 6,244 tok/s, forced on
#      6,339, forced off 6,637 (0.941x / 0.955x of forced off); goodput drafted 70% of the level,
#      its model reading k = 3 at 1.03-1.09x of plain where a spec prefill batch cost ~2x a
#      plain one. At 32 drafting wins: the change must not cost it there.
#      Ran twice in session 46 on the unshrunk kinds (code 8f386a7ed6b6; RESULTS-HISTORY,
#      Session 46); next:
#      CONC=16,32,64 PASSES=2 LEVEL_S=12 (~7 min), 16 first so that 32 meets a warm table.
#   lv | lv44 | il | sv | ds | r64 | rc | rs | fo | ...: sessions 37-45's calls.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s46.sh kd|lv|...
case "${1:-}" in
kd) ;;
*) exec bash scripts/device/call_s45.sh "$@" ;;
esac
PREFILL_GRAPH=${PREFILL_GRAPH:-breakable}  # SGLang's default, which common.sh turns off otherwise
source scripts/device/common.sh
say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"  # RUN_FLAGS add its decision log
CONC=${CONC:-32,64}
dense_pinned_setup kd
export ADAPTIVE_SPEC_SAMPLE_LOG=1
sweep 0 kd-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
  "${SYSTEMS:-adaptive-spec:goodput,adaptive-spec:forced-on,adaptive-spec:forced-off}" \
  --concurrency "$CONC" --repeat "${PASSES:-1}" --time-budget-s "${LEVEL_S:-15}" \
  --time-budget-from "${CONC%%,*}:${LEVEL_S:-15}" --start-timeout-s 300 \
  --system-args "$GOODPUT" > /tmp/tail-kd.txt
keep_ours_logs kd
report kd- logs-kd.tar.xz /tmp/tail-kd.txt
( cd /tmp && python3 -m adaptive_spec.bench.sample_summary --realized "$OUT"/samples-kd-*.txt
  python3 -m adaptive_spec.bench.sample_summary --arrivals "$OUT/samples-kd-goodput.txt" ) 2>&1 \
  | tail -60
grep -o "model=[^ ]*\( held=[^ ]*\)\?" "$OUT/decisions-kd.log" | sort | uniq -c | sort -rn \
  | head -12
goodput_cost_model "$OUT"/sweep-kd-dense.json
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" kd
