#!/usr/bin/env bash
# Session 43 (one GPU, H100 or H200).
#   il (~8 min) the interleaved instrument (benchmarks/interleave.py): ONE goodput server (dense
#      8B pair, dial 0.7, up to 3 steps); at each of CONC (default 16,32,64,128) a closed loop
#      held while the server's settings switch between drafting forced off, forced on (k = 3)
#      and its own policy every 4 s (the first 1 s of each uncounted), ROUNDS (default 5) rounds,
#      the order rotated: the policy's choice against the static ones on the same server at the
#      same moments, no server start between them. Read `paired_vs_static` in the JSON (the
#      policy's window over the better forced arm's, per round) and the paired lines below.
#   sv | ds | r64 | rc | rs | ...: session 41's and 42's calls.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s43.sh il|sv|...
case "${1:-}" in
il) ;;
*) exec bash scripts/device/call_s42.sh "$@" ;;
esac
PREFILL_GRAPH=${PREFILL_GRAPH:-breakable}  # SGLang's default, which common.sh turns off otherwise
source scripts/device/common.sh
say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
dense_pinned_setup il
sweep 0 il-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 adaptive-spec:goodput \
  --concurrency "${CONC:-16,32,64,128}" --interleave off,on,policy --interleave-window-s 4 \
  --interleave-settle-s 1 --interleave-rounds "${ROUNDS:-5}" --start-timeout-s 300 \
  --system-args "$GOODPUT" > /tmp/tail-il.txt
report il- logs-il.tar.xz /tmp/tail-il.txt
for of in adaptive-spec:forced-off,adaptive-spec:forced-on adaptive-spec:forced-off \
    adaptive-spec:forced-on; do
  goodput_paired "$OUT"/sweep-il-dense.json "$of"
done
goodput_cost_model "$OUT"/sweep-il-dense.json
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" il
