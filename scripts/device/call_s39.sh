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
#   be | be64 | l64 | k7 | k9 | kb | lc | dl: session 37's and 38's calls.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s39.sh busy|...
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
*)
  say "usage: $0 busy|be|be64|l64|k7|k9|kb|lc|dl"; exit 2
  ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
