#!/usr/bin/env bash
# Session 42 (one GPU, H100 or H200; ~11 minutes of device time left when written).
#   r64 (~5 min) session 40's `rc` at one level: plain, eagle3, goodput (the realized rate, the
#      default) and goodput-parts (`--adaptive-spec-goodput-model parts`) at CONC (default 64,
#      where session 40's goodput drafted k = 3 on a tie of its model's parts and made 0.92x of
#      plain on an H100), 2 passes (SYSTEMS= a shorter list for a short budget), the goodput
#      server's samples logged; then the paired ratios,
#      the status's realized ratios and what each k delivered per bucket (`sample_summary`).
#   sv | ds | rc | rs | ...: session 41's calls (`call_s41.sh`).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s42.sh r64|sv|...
case "${1:-}" in
r64) ;;
*) exec bash scripts/device/call_s41.sh "$@" ;;
esac
PREFILL_GRAPH=${PREFILL_GRAPH:-breakable}  # SGLang's default, which common.sh turns off otherwise
source scripts/device/common.sh
say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
PARTS="adaptive-spec:goodput-parts=--adaptive-spec-policy goodput --adaptive-spec-goodput-model parts"
dense_pinned_setup r64
export ADAPTIVE_SPEC_SAMPLE_LOG=1
sweep 0 r64-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
  "${SYSTEMS:-plain,eagle3,adaptive-spec:goodput,adaptive-spec:goodput-parts}" --concurrency "${CONC:-64}" \
  --repeat 2 --time-budget-s 6 --start-timeout-s 300 --system-args "$GOODPUT" \
  --system-args "$PARTS" > /tmp/tail-r64.txt
grep -h "adaptive_spec samples" /tmp/logs-r64-dense/server-adaptive-spec_goodput.log \
  > "$OUT/samples-r64.txt"
report r64- logs-r64.tar.xz /tmp/tail-r64.txt
( cd /tmp && python3 -m adaptive_spec.bench.sample_summary --realized "$OUT/samples-r64.txt" )
goodput_paired "$OUT"/sweep-r64-dense.json envelope plain adaptive-spec:goodput-parts
( cd /tmp && python3 -m adaptive_spec.bench.cli paired "$OUT"/sweep-r64-dense.json \
    --system adaptive-spec:goodput-parts --of plain )
goodput_cost_model "$OUT"/sweep-r64-dense.json
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" r64
