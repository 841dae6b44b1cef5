#!/usr/bin/env bash
# Session 33. One H200 each. Session 32 put the 128-request deficit (forced off 0.954x of plain,
# goodput 0.928x over 12 pairs, every steady decision plain) in the spec server's host time: by
# the stack sampler every kernel-launch site of its eager prefills 20-65% dearer than plain's,
# same model and kernels. A garbage collection runs inside whichever call allocated last and
# would read exactly so; so would another thread of the scheduler process taking the GIL.
#   gf (~9 min) the phase clocks now also time the garbage collector and read each scheduler
#      thread's CPU: plain and forced off at 128, dense 8B pair, dial 0.7, --stream-interval 4,
#      pinned, 3 passes; then the same with SGLang's /freeze_gc after each server's warm-up
#      (`--freeze-gc all`, new): does freezing the collector close the gap?
#   pg (~9 min) prefill CUDA graphs (SGLang 0.5.16's default `breakable` backend; every sweep
#      since session 1 ran them disabled, untried): plain, forced off and goodput at 128, the
#      same pair and pin, 3 passes, lossless checked per row. FREEZE=1 adds --freeze-gc all.
#   pf (~9 min) pg found the spec servers' plain prefills eager (450 of 451; plain's 779 of 784
#      graphed; forced off 0.63x, goodput 0.62x of plain at 128): a prefill graph replays only
#      for the hidden-state capture it was captured with, FULL on an EAGLE target. Plain
#      prefills now ask for it (hooks_offpath.prefill_graph_capture_mode). Plain, forced off
#      and goodput at 128 / 256 with breakable prefill graphs, 4 passes, lossless per row.
#   pl (~4 min, the session's last device minutes) the low-load side with breakable prefill
#      graphs: plain and goodput at 1 / 16, 2 passes (goodput drafts there: spec prefills).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s33.sh gf|pg|pf|pl
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
FORCED_OFF="adaptive-spec:forced-off=--adaptive-spec-force off"

case "${1:-}" in
gf|pg|pf|pl)
  dense_pinned_setup $1
  if [ "$1" = gf ]; then
    sweep 0 gf-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 plain,adaptive-spec:forced-off \
      --concurrency 128 --repeat 3 --time-budget-s 6 --system-args "$FORCED_OFF" \
      --deadline-s $(( ($(left) - 25) / 2 )) > /tmp/tail-gf.txt
    sweep 0 gf-frozen-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 plain,adaptive-spec:forced-off \
      --concurrency 128 --repeat 3 --time-budget-s 6 --system-args "$FORCED_OFF" --freeze-gc all \
      >> /tmp/tail-gf.txt
  elif [ "$1" = pl ]; then
    sweep 0 pl-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 plain,adaptive-spec:goodput \
      --concurrency 1,16 --repeat 2 --time-budget-s 6 --min-start-s 60 \
      --server-arg "--cuda-graph-backend-prefill breakable" --system-args "$GOODPUT" > /tmp/tail-pl.txt
  elif [ "$1" = pf ]; then
    sweep 0 pf-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
      plain,adaptive-spec:forced-off,adaptive-spec:goodput --concurrency 128,256 --repeat 4 --time-budget-s 6 \
      --server-arg "--cuda-graph-backend-prefill breakable" --system-args "$GOODPUT" \
      --system-args "$FORCED_OFF" > /tmp/tail-pf.txt
    for f in /tmp/logs-pf-dense/server-*.log; do  # prefills through the graph, per server
      echo "$(basename $f): prefills by 'cuda graph:' $(grep "Prefill batch" $f | grep -o "cuda graph: [A-Za-z]*" | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
    done
  else
    FZ=(); [ "${FREEZE:-0}" = 1 ] && FZ=(--freeze-gc all)
    sweep 0 pg-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
      plain,adaptive-spec:forced-off,adaptive-spec:goodput --concurrency 128 --repeat 3 --time-budget-s 6 \
      --server-arg "--cuda-graph-backend-prefill breakable" --system-args "$GOODPUT" \
      --system-args "$FORCED_OFF" "${FZ[@]}" > /tmp/tail-pg.txt
  fi
  report $1- logs-$1.tar.xz /tmp/tail-$1.txt
  grep -h -i -E "freezing gc|prefill cuda graph|capture.*prefill|breakable" /tmp/logs-$1-*/*.log | grep -v server_args | cut -c1-300 | sort | uniq -c | head -20
  for d in /tmp/logs-$1-*; do
    phases "$d" --bands 96-159,160-256 --max-ms-per-step 40 | tail -8
  done
  core_probe $1-after > /dev/null
  ;;
*)
  say "usage: $0 gf|pg|pf|pl"; exit 2
  ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
