#!/usr/bin/env bash
# Session 39. One H200, SGLang's defaults (breakable prefill CUDA graphs on every server), dense
# 8B pair, dial 0.7, --stream-interval 4, schedulers pinned, lossless checked per row.
#   busy (~6 min) goodput where plain wins, after session 39 priced the switch on of refreshes
#      and repeated probes (`GoodputPolicy._switch_paid`; session 38's `be64` ran plain on every
#      steady decision and made 0.93x of plain at 56 and 68, ~3% of it a refresh of a drafting
#      k every 1,024 decisions in simulation): plain, eagle3 (3 steps) and goodput at 56, 68
#      and 128, 2 passes, the goodput server's step-time samples logged. Read with
#      `adaptive-spec-bench paired FILE --system adaptive-spec:goodput --of envelope` and
#      `python -m adaptive_spec.bench.sample_summary --drafting-runs samples-busy.txt`.
#   fo (~5 min, written in session 39, not run yet) where goodput's off steps cost more than
#      plain's at 56-128 requests (session 39: plain on every steady decision, 0.85-0.97x of
#      plain per pass; its prefills at 90-130 running fitted 10.0 ms of target forward against
#      plain's 5.1) while forced off made 1.009x / 1.022x at 64 / 128 (session 35, another run):
#      plain, forced off and goodput in one run at 64 and 128, 2 passes, the phase clocks on
#      every server (no other profiler), prefills through the graph counted per server. Read
#      with `paired FILE --system adaptive-spec:goodput --of adaptive-spec:forced-off` and the
#      phase bands below.
#   be | be64 | l64 | k7 | k9 | kb | lc | dl: session 37's and 38's calls.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s39.sh busy|fo|...
case "${1:-}" in
be|be64|l64|k7|k9|kb|lc|dl) exec bash scripts/device/call_s38.sh "$1" ;;
esac
PREFILL_GRAPH=${PREFILL_GRAPH:-breakable}  # SGLang's default, which common.sh turns off otherwise
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"

case "${1:-}" in
busy)
  sampled_goodput_sweep busy 56,68,128 64 128
  ( cd /tmp && python3 -m adaptive_spec.bench.sample_summary --drafting-runs \
      "$OUT/samples-busy.txt" )
  ;;
fo)
  dense_pinned_setup $1
  sweep 0 fo-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,adaptive-spec:forced-off,adaptive-spec:goodput --concurrency 64,128 --repeat 2 \
    --time-budget-s 6 --start-timeout-s 360 --system-args "$GOODPUT" \
    --system-args "adaptive-spec:forced-off=--adaptive-spec-force off" > /tmp/tail-fo.txt
  report fo- logs-fo.tar.xz /tmp/tail-fo.txt
  for f in /tmp/logs-fo-dense/server-*.log; do  # prefills through the graph, per server
    echo "$(basename $f): prefills by 'cuda graph:'" \
      "$(grep "Prefill batch" $f | grep -o "cuda graph: [A-Za-z]*" | sort | uniq -c | tr '\n' ';')"
  done
  phases /tmp/logs-fo-dense --bands 40-64,90-130 --fit | tail -12
  goodput_paired "$OUT"/sweep-fo-dense.json adaptive-spec:forced-off plain
  goodput_cost_model "$OUT"/sweep-fo-dense.json
  ;;
*)
  say "usage: $0 busy|fo|be|be64|l64|k7|k9|kb|lc|dl"; exit 2
  ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
