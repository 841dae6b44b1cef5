#!/usr/bin/env bash
# GPU machine nvidia-h200-x2, one command (~7 min): tensor parallel 2 (issue 9).
# Same-run sweep at --tp-size 2 of plain, eagle3 and adaptive-spec:goodput on the dial-0.7 pair
# (greedy outputs compared with plain on every request), then every rank's decision digest
# (logged every 512 decisions) compared across the two ranks.
# Results under $OUT: sweep-tp2.json/.png, rank-check.txt, logs.tar.xz.
source scripts/device/common.sh
DEADLINE_S=${DEADLINE_S:-420}
DIAL=/tmp/dial-8b
if [ ! -f "$DIAL/.done" ]; then
  ( cd /tmp && python3 -m adaptive_spec.bench.models --out "$DIAL" --preset 8b --drafts dial:0.7 \
      && touch "$DIAL/.done" ) > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 3; }
fi
say "models ready"
export ADAPTIVE_SPEC_RANK_CHECK_EVERY=512 NCCL_NVLS_ENABLE=0
cd /tmp
python3 -m adaptive_spec.bench.cli sweep --concurrency 1,4,16,32,64,128,256 --new-tokens 192 \
  --prompt-len 40,128 --temperature 0 --time-budget-s 5 --drain-s 2 --requests-per-level 100000 \
  --start-stagger-s 10 --server-arg "--tp-size 2" --server-arg "--max-running-requests 260" \
  --system-args "adaptive-spec:goodput+=--adaptive-spec-log-decisions" \
  --target "$DIAL/target" --draft "$DIAL/draft-dial-0.7" --name tp2-dial-0.7 \
  --systems plain,eagle3,adaptive-spec:goodput --deadline-s $(( $(left) - 20 )) --quiet \
  --log-dir /tmp/logs-tp2 --out "$OUT/sweep-tp2-dial-0.7.json" 2>&1 | tee "$OUT/sweep.txt"
L=/tmp/logs-tp2/server-adaptive-spec_goodput.log
grep -o "rank_check rank=[0-9]* decisions=[0-9]* digest=[0-9a-f]*" "$L" > "$OUT/rank-check.txt"
python3 - "$OUT/rank-check.txt" <<'PY'
import sys, collections
by = collections.defaultdict(dict)
for ln in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in ln.split()[1:])
    by[int(f["decisions"])][int(f["rank"])] = f["digest"]
both = {n: d for n, d in by.items() if len(d) == 2}
agree = sum(1 for d in both.values() if d[0] == d[1])
print(f"rank check: {len(both)} checkpoints seen on both ranks, {agree} agree, "
      f"{len(both) - agree} differ; last {max(both) if both else None} decisions")
PY
for f in /tmp/logs-tp2/*.log; do
  grep -E "adaptive_spec|Traceback|Error|rror:" "$f" | grep -v "GET /adaptive_spec" | head -400 > "$f.excerpt"
  grep -E "Decode batch|Prefill batch" "$f" | tail -2000 > "$f.batches"; done
tar -cJf "$OUT/logs.tar.xz" /tmp/logs-tp2/*.excerpt /tmp/logs-tp2/*.batches 2>/dev/null
rm -f "$OUT/build.log"
say "done"
