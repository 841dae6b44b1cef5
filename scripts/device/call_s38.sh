#!/usr/bin/env bash
# Session 38 (written without a GPU: none was lent that session; run it in a later one). One
# H200, SGLang's defaults (breakable prefill CUDA graphs on every server), dense 8B pair, dial
# 0.7, --stream-interval 4, schedulers pinned, lossless checked per row.
#   be (~9 min) a batch crossing a bucket edge: closed-loop concurrencies that are not powers of
#      two, so the running batch moves across the 32 / 33 edge (36, 40) or stays inside one
#      bucket as a control (24): plain, eagle3 (3 steps) and goodput, 2 passes, the goodput
#      server's step-time samples logged (ADAPTIVE_SPEC_SAMPLE_LOG=1: each result's batch size,
#      so the crossings can be counted) and its final status (switches, `preferred_runs_ms`,
#      `choice_by_bucket`). Session 38 found the policy flapping at such edges in simulation
#      only (policy/preferred_runs.py; before the fix 0.33-0.97x of the better static choice at
#      alternations every 2-10 decisions); this is the GPU question. Read with
#      `adaptive-spec-bench paired FILE --system adaptive-spec:goodput --of envelope` and
#      `python -m adaptive_spec.bench.sample_summary --crossings samples-be.txt` (bucket changes
#      between consecutive results, and drafting turned on or off at them).
#   be64 (~9 min) the same across the 64 / 65 edge, where with this draft plain wins above
#      (session 36: EAGLE-3 0.99x of plain at 64, 0.64x at 128): 56 (control), 68 and 72.
#   l64 (~5 min) 64 requests with up to 7 steps after session 38 turned the launch pricing off
#      (k7 had drafted k = 5 there, 0.815x of plain in one repeat): plain, eagle3 at 7 steps,
#      goodput, 2 passes.
#   k7 | k9 | kb | lc | dl: session 37's calls (call_s37.sh).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s38.sh be|be64|l64|k7|k9|kb|lc|dl
case "${1:-}" in
k7|k9|kb|lc|dl) exec bash scripts/device/call_s37.sh "$1" ;;
esac
PREFILL_GRAPH=${PREFILL_GRAPH:-breakable}  # SGLang's default, which common.sh turns off otherwise
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"

case "${1:-}" in
be) sampled_goodput_sweep be 24,36,40 32 64 ;;
be64) sampled_goodput_sweep be64 56,68,72 64 128 ;;
l64)
  dense_pinned_setup $1
  sweep 0 l64-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,adaptive-spec:goodput --concurrency 64 --repeat 2 --time-budget-s 6 \
    --start-timeout-s 360 --system-args "$GOODPUT" --spec-steps 7 > /tmp/tail-l64.txt
  report l64- logs-l64.tar.xz /tmp/tail-l64.txt
  goodput_paired "$OUT"/sweep-l64-dense.json envelope
  goodput_cost_model "$OUT"/sweep-l64-dense.json
  ;;
*)
  say "usage: $0 be|be64|l64|k7|k9|kb|lc|dl"; exit 2
  ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
