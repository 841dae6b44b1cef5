#!/usr/bin/env bash
# GPU machine nvidia-h200 (ONE H200: only that kind was lent in session 19, 2026-12-01).
# Session 18's two-GPU plans (call_s18.sh cx / fo) cut down to one GPU:
#   cx (~8 min) issue 5: the goodput table's larger-batch cap and hopeless-refresh limit on one
#      GPU (session 18 ran them only at TP = 2): plain, eagle3, goodput at 64 / 128 on the
#      dense pair (dial 0.7), 3 paired repeats, 8-s windows. Session 18's p2 had goodput at
#      0.930x of max at 64 (its table read a plain step at 33-64 requests as 8.95 ms against 6.73
#      at 65-128). Prints the goodput server's final table, prefill term and batch fit.
#   aw (~8 min) issue 3, the always-wrong pair with ONE threshold setting for both drafts
#      (THRESHOLD_BOTH): plain, forced-off, threshold at 64 (3 pairs: session 18's t3 read the
#      threshold policy at 0.908x of plain there, off on every steady step), then plain and
#      threshold at 1 / 16 / 128 / 256 (2 pairs).
#   ar (~9 min; prepared, not run: `ak` ran its 64-256 part) issue 3, the always-right pair with the same setting: plain, eagle3, threshold
#      at 1 / 16 / 64 / 128 / 256, 2 pairs. Sessions 15 and 18 measured EAGLE-3 ahead of plain
#      at every N up to 256 with this draft, so any load threshold below 256 loses there (t3).
# THRESHOLD_BOTH puts the load threshold above the server's cap of running requests (260) and
# turns the queue rule off: the acceptance floor (1.5, the default) alone decides. That is the
# setting this GPU and these drafts call for; it is not a load-adaptive threshold.
#   ak (~9.5 min) kp, then ar at 64 / 128 / 256 only (1 and 16 ran in session 18 with the
#      threshold at 96, on there as here; forced on against EAGLE-3 at 1 / 16 too).
#   gw (~5 min) issue 5's always-wrong column: plain and goodput at 1 / 16 / 64 / 256, 2 pairs.
#   g5 / g9 (~8 min each; prepared, not run) issue 5's dial-0.5 / dial-0.9 columns: plain, eagle3,
#      goodput at 1 / 16 / 64 / 256, 2 pairs (last run in sessions 13-16).
#   kp (~3 min) issue 6: scripts/device/topp_tail_probe.py, where the top-p verify's GPU time goes.
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s19.sh cx|aw|ar|ak|gw|g5|g9|kp
source scripts/device/common.sh

GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"

# the pair in $1 with draft $2 (builder flags after), then the code digest line
pair() { local dir=$1 draft=$2; shift 2; build_pair "$dir" "$draft" "$@" || exit 3
  say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"; }
# scripts/device/topp_tail_probe.py with $1 input draws, at most $2 seconds
topp_probe() {
  ( cd /tmp && timeout "$2" python3 "$REPO/scripts/device/topp_tail_probe.py" "$1" ) 2>&1 \
    | grep -v -e UserWarning -e "tl.where" | tee "$OUT/topp-tail-probe.txt"
}
# the always-right table with THRESHOLD_BOTH at the concurrencies $1
always_right() {
  pair /tmp/al-8b aligned --preset 8b
  sweep 0 ar-aligned /tmp/al-8b/target /tmp/al-8b/draft-aligned plain,eagle3,adaptive-spec:threshold \
    --concurrency "$1" --repeat 2 --time-budget-s 5 --time-budget-from 128:6,256:6 \
    --system-args "$THRESHOLD_BOTH" > /tmp/tail-ar-aligned.txt
  report ar- logs-ar.tar.xz /tmp/tail-ar-aligned.txt
}
case "${1:-}" in
cx)
  export DEADLINE_S=${DEADLINE_S:-540} ADAPTIVE_SPEC_WARM_SAMPLING=0
  pair /tmp/soak-8b dial:0.7 --preset 8b
  sweep 0 cx-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 plain,eagle3,adaptive-spec:goodput \
    --concurrency 64,128 --repeat 3 --time-budget-s 8 --time-budget-from 128:8 \
    --system-args "$GOODPUT" > /tmp/tail-cx-dense.txt
  report cx- logs-cx.tar.xz /tmp/tail-cx-dense.txt
  goodput_cost_model "$OUT"/sweep-cx-dense.json
  ;;
aw)
  export DEADLINE_S=${DEADLINE_S:-540} ADAPTIVE_SPEC_WARM_SAMPLING=0
  pair /tmp/rw-8b random --preset 8b
  sweep 0 aw-64 /tmp/rw-8b/target /tmp/rw-8b/draft-random plain,adaptive-spec:forced-off,adaptive-spec:threshold \
    --concurrency 64 --repeat 3 --time-budget-s 6 --system-args "$THRESHOLD_BOTH" > /tmp/tail-aw-64.txt
  sweep 0 aw-rest /tmp/rw-8b/target /tmp/rw-8b/draft-random plain,adaptive-spec:threshold \
    --concurrency 1,16,128,256 --repeat 2 --time-budget-s 5 --time-budget-from 128:6,256:6 \
    --system-args "$THRESHOLD_BOTH" > /tmp/tail-aw-rest.txt
  report aw- logs-aw.tar.xz /tmp/tail-aw-64.txt /tmp/tail-aw-rest.txt
  ;;
ar)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  always_right 1,16,64,128,256
  ;;
ak)  # kp, then ar at 64 / 128 / 256 only (what one call of <= 600 s holds with 836 s left)
  export DEADLINE_S=${DEADLINE_S:-575} ADAPTIVE_SPEC_WARM_SAMPLING=0
  topp_probe 5 150
  say "probe done"
  always_right 64,128,256
  ;;
gw)  # issue 5's always-wrong column on the current goodput code (last run in session 16)
  export DEADLINE_S=${DEADLINE_S:-370} ADAPTIVE_SPEC_WARM_SAMPLING=0
  pair /tmp/rw-8b random --preset 8b
  sweep 0 gw-random /tmp/rw-8b/target /tmp/rw-8b/draft-random plain,adaptive-spec:goodput \
    --concurrency 1,16,64,256 --repeat 2 --time-budget-s 5 --time-budget-from 256:6 \
    --system-args "$GOODPUT" > /tmp/tail-gw-random.txt
  report gw- logs-gw.tar.xz /tmp/tail-gw-random.txt
  ;;
g5|g9)  # issue 5's dial-0.5 / dial-0.9 column on the current goodput code (prepared, not run)
  export DEADLINE_S=${DEADLINE_S:-560} ADAPTIVE_SPEC_WARM_SAMPLING=0
  dial=0.${1#g}
  pair /tmp/dial-8b "dial:$dial" --preset 8b
  sweep 0 "$1-dial" /tmp/dial-8b/target "/tmp/dial-8b/draft-dial-$dial" plain,eagle3,adaptive-spec:goodput \
    --concurrency 1,16,64,256 --repeat 2 --time-budget-s 5 --time-budget-from 256:6 \
    --system-args "$GOODPUT" > "/tmp/tail-$1-dial.txt"
  report "$1-" "logs-$1.tar.xz" "/tmp/tail-$1-dial.txt"
  ;;
kp)  # issue 6: where the top-p verify's GPU time goes (scripts/device/topp_tail_probe.py)
  topp_probe 6 200
  ;;
*) echo "usage: call_s19.sh cx|aw|ar|ak|gw|g5|g9|kp"; exit 2 ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
say "done $1"
