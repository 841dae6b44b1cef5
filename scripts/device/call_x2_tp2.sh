#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, one command (~7 min): tensor parallel 2 (issue 9).
# Same-run sweep at --tp-size 2 of plain, eagle3 and adaptive-spec:goodput on the dial-0.7 pair
# (greedy outputs compared with plain on every request), then every rank's decision digest
# (logged every 512 decisions) compared across the two ranks.
# Results under $OUT: sweep-tp2.json/.png, rank-check.txt, logs.tar.xz.
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-420}
DIAL=/tmp/dial-8b
build_pair "$DIAL" dial:0.7 --preset 8b || exit 3
say "models ready"
export ADAPTIVE_SPEC_RANK_CHECK_EVERY=512 NCCL_NVLS_ENABLE=0
cd /tmp
python3 -m adaptive_spec.bench.cli sweep "${SWEEP_FLAGS[@]}" --server-arg "--tp-size 2" \
  --system-args "adaptive-spec:goodput+=--adaptive-spec-log-decisions" \
  --target "$DIAL/target" --draft "$DIAL/draft-dial-0.7" --name tp2-dial-0.7 \
  --systems plain,eagle3,adaptive-spec:goodput --deadline-s $(( $(left) - 20 )) \
  --log-dir /tmp/logs-tp2 --out "$OUT/sweep-tp2-dial-0.7.json" 2>&1 | tee "$OUT/sweep.txt"
python3 "$REPO/scripts/device/rank_check.py" /tmp/logs-tp2/server-adaptive-spec_goodput.log \
  | tee "$OUT/rank-check.txt"
pack_logs logs.tar.xz /tmp/logs-tp2/*.log
rm -f "$OUT/build.log"
say "done"
