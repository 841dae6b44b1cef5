#!/usr/bin/env bash
# Session 24. One H200 each (the only kind lent):
#   fk (~7 min) issue 3's "no KV leak, also after 10k flapping steps": the soak (step / bursty /
#      sawtooth load between 1 and 128 streams, the unusual requests, probes against plain before,
#      under load and after) for 180 s against a server forced to flap every 8 steps
#      (--adaptive-spec-force flap:8, dial-0.7 pair, the default catch-up): KV tokens in use at
#      the idle start and end, the step modes (how many off / drafting steps) in its status.
#   ta (~8 min) issue 3's threshold table with the always-right draft at 128 / 256, 3 paired
#      repeats, 8-s windows (session 19's `ak`, 2 pairs of 6 s: 1.009x / 0.966x of max(plain,
#      eagle3) with the same setting; plain and EAGLE-3 trade places at 256 between sessions).
#      TA_CONC / TA_REPEAT: other levels / repeats (the two extra runs at 128: TA_CONC=128).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s24.sh fk|ta
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
case "${1:-}" in
fk)
  export SOAK_GPU=0 SOAK_S=${SOAK_S:-180} SOAK_POLICY="--adaptive-spec-force flap:8"
  bash scripts/device/call_soak.sh start || exit $?
  DEADLINE_S=$(( ${DEADLINE_S:-560} - $(date +%s) + T_START )) bash scripts/device/call_soak.sh collect
  python3 - "$OUT/soak.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print({k: d.get(k) for k in ("duration_s", "requests", "failed", "first_error", "kv_free_start",
                              "kv_free_end", "kv_used_start", "kv_used_end", "idle_at_end",
                              "probe_identical_to_plain", "rss_mb_start", "rss_mb_end")})
for rank in d.get("status_at_end") or []:
    print("status", json.dumps(rank))
print("under load", d.get("probes_under_load"))
PY
  ;;
ta)
  export DEADLINE_S=${DEADLINE_S:-570} ADAPTIVE_SPEC_WARM_SAMPLING=0
  build_pair /tmp/al-8b aligned --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built"
  sweep 0 ta-aligned /tmp/al-8b/target /tmp/al-8b/draft-aligned plain,eagle3,adaptive-spec:threshold \
    --concurrency ${TA_CONC:-256,128} --repeat ${TA_REPEAT:-3} --time-budget-s 8 \
    --system-args "$THRESHOLD_BOTH" \
    > /tmp/tail-ta.txt
  report ta- logs-ta.tar.xz /tmp/tail-ta.txt
  ;;
*) echo "usage: call_s24.sh fk|ta"; exit 2 ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
say "done $1"
