#!/usr/bin/env bash
# Session 35. One H200. SGLang's defaults (breakable prefill CUDA graphs on every server), dense 8B
# pair, dial 0.7, --stream-interval 4, schedulers pinned, lossless checked per row.
#   os (~8 min) the off path and the choice at 64 / 128 on SGLang's defaults: plain, forced off and
#      goodput, 2 passes, every server with the stack sampler (ADAPTIVE_SPEC_STACK_SAMPLER=1,
#      which turns the phase clocks on too). Why: `fx` (this session) found goodput drafting at
#      64 requests (k = 3 on 156-330 steady decisions, 0.918x of plain) on a table that read a
#      plain step at 9.1 ms where plain's own decode step, fitted over its windows at 48-95
#      running, read 6.1 ms; forced off below 128 was never measured with prefill graphs; the
#      stack sampler last ran with them off (session 32). Goodput runs with the decode results timed at the end of SGLang's
#      processing (this session's `Controller.close_result`).
#      Ran once (as below): goodput's server missed the sweep's 200-s start limit (three servers
#      capturing graphs at once on a fresh machine without a JIT cache); plain and forced off ran.
#   gp (~6 min) goodput's choice at 64 with the decode results timed alike: plain, eagle3 and
#      goodput at 64, 3 passes, a 300-s start limit; no stack sampler.
#   sl (~5 min; written after session 35's device minutes ran out, ran in session 36) which samples carry
#      goodput's plain cell at 33-64 running: `gp` read it at 7.8 ms (9.1 in `fx`, before the
#      timing fix) where plain's decode step read 6.6 ms fitted over its phase-clock windows, and
#      goodput ran k = 3 where EAGLE-3 made 0.86x of plain. Plain and goodput at 64, 3 passes, every
#      step-time sample logged with its circumstances (ADAPTIVE_SPEC_SAMPLE_LOG=1), split by
#      `sample_summary`.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s35.sh os|gp|sl
PREFILL_GRAPH=${PREFILL_GRAPH:-breakable}  # SGLang's default, which common.sh turns off otherwise
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
FORCED_OFF="adaptive-spec:forced-off=--adaptive-spec-force off"

case "${1:-}" in
os)
  export ADAPTIVE_SPEC_STACK_SAMPLER=1
  dense_pinned_setup $1
  sweep 0 os-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,adaptive-spec:forced-off,adaptive-spec:goodput --concurrency 64,128 --repeat 2 \
    --time-budget-s 6 --system-args "$GOODPUT" --system-args "$FORCED_OFF" > /tmp/tail-os.txt
  report os- logs-os.tar.xz /tmp/tail-os.txt
  ( cd /tmp && python3 -m adaptive_spec.bench.log_throughput /tmp/logs-os-dense/server-*.log ) | grep -v ",0,,0,0,0$"
  for f in /tmp/logs-os-dense/server-*.log; do  # prefills through the graph, per server
    echo "$(basename $f): prefills by 'cuda graph:' $(grep "Prefill batch" $f | grep -o "cuda graph: [A-Za-z]*" | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
  done
  phases /tmp/logs-os-dense --bands 96-159,48-95 --max-ms-per-step 40 | tail -8
  for band in 48-80 96-160; do  # function by function, every 1-s window of the band pooled
    ( cd /tmp && python3 -m adaptive_spec.bench.stack_summary --band $band --vs plain --top 40 \
        /tmp/logs-os-dense/server-*.log ) | tee "$OUT/stacks-os-$band.txt" | head -50
  done
  goodput_cost_model "$OUT"/sweep-os-dense.json
  ;;
gp)
  dense_pinned_setup $1
  sweep 0 gp-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 plain,eagle3,adaptive-spec:goodput \
    --concurrency 64 --repeat 3 --time-budget-s 6 --start-timeout-s 300 --system-args "$GOODPUT" > /tmp/tail-gp.txt
  report gp- logs-gp.tar.xz /tmp/tail-gp.txt
  ( cd /tmp && python3 -m adaptive_spec.bench.log_throughput /tmp/logs-gp-dense/server-*.log ) | grep -v ",0,,0,0,0$"
  phases /tmp/logs-gp-dense --bands 48-95 --max-ms-per-step 40 | tail -5
  goodput_cost_model "$OUT"/sweep-gp-dense.json
  ;;
sl)
  export ADAPTIVE_SPEC_SAMPLE_LOG=1
  dense_pinned_setup $1
  sweep 0 sl-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 plain,adaptive-spec:goodput \
    --concurrency 64 --repeat 3 --time-budget-s 6 --start-timeout-s 300 --system-args "$GOODPUT" > /tmp/tail-sl.txt
  report sl- logs-sl.tar.xz /tmp/tail-sl.txt
  grep -h "adaptive_spec samples" /tmp/logs-sl-dense/server-adaptive-spec_goodput.log > "$OUT/samples-sl.txt"
  for b in 32 64; do ( cd /tmp && python3 -m adaptive_spec.bench.sample_summary --bucket $b \
      /tmp/logs-sl-dense/server-adaptive-spec_goodput.log ); done
  phases /tmp/logs-sl-dense --bands 48-95 --max-ms-per-step 40 | tail -4
  goodput_cost_model "$OUT"/sweep-sl-dense.json
  ;;
*)
  say "usage: $0 os|gp|sl"; exit 2
  ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
