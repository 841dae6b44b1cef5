#!/usr/bin/env bash
# Session 29. One H200:
#   si (~6 min) issue 5 at high load with the HTTP front-end out of the way: `ad` (session 29)
#      found no request waiting at the scheduler in goodput's slow 256-request repeat (mean
#      waiting 0.0-0.1 at 160-256 running, running 256 -> 165 with no prefill for ~1 s), and
#      across sessions 28-29 the 256 levels with a high TTFT were those whose front-end
#      process (HTTP server + tokenizer manager, one core) read 0.76-0.96 of a core, plain's
#      as much as goodput's. Dense pair, dial 0.7, all four systems at 256, 2 passes (128 left
#      out: device time), every server with `--stream-interval 4` (SGLang's own throughput
#      setting: a stream event per 4 tokens, the first token still at once), phase clocks on.
# Usage (repo root, .bundle and .device carried): [SI_SYSTEMS=plain,adaptive-spec:goodput] bash scripts/device/call_s29.sh si
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
case "${1:-}" in
si)
  export DEADLINE_S=${DEADLINE_S:-450} ADAPTIVE_SPEC_WARM_SAMPLING=0 ADAPTIVE_SPEC_PHASE_TIMING=1 \
    ADAPTIVE_SPEC_PHASE_WINDOW_S=1
  build_pair /tmp/soak-8b dial:0.7 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  RUN_FLAGS+=(--start-timeout-s 200 --server-arg "--stream-interval 4")
  sweep 0 si-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 "${SI_SYSTEMS:-$FOUR}" --concurrency 256 \
    --repeat 2 --time-budget-s 6 --system-args "$GOODPUT" > /tmp/tail-si.txt
  report si- logs-si.tar.xz /tmp/tail-si.txt
  phases /tmp/logs-si-dense --bands 160-256,96-159 | tail -10
  ;;
*)
  say "usage: $0 si"; exit 2
  ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
