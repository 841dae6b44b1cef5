#!/usr/bin/env bash
# Session 41 (no GPU lent; written for the next session). One GPU, H100 or H200.
#   sv (~3 min) the README's main command, `bash scripts/serve.sh`, as a user runs it (never run
#      on a GPU before): the venv it makes is a shim here (no network: its python and
#      adaptive-spec-server run this package on the bundle's SGLang), the rest as written: the
#      synthetic 8B pair built by the script into its own folder, the server on
#      127.0.0.1:30000, then one greedy request twice (the same tokens back), the status and our
#      Prometheus series, and the server stopped. Files: serve.log, serve-status.json,
#      serve-metrics.txt, serve-generate.json.
#   ds (~7 min) session 41's switch-on horizon (the price spread over the batch's stay in its
#      bucket): a step load LOW -> 128 -> LOW (25 s a phase) on plain, eagle3 and goodput, one
#      after the other; the rows per phase (phase 2 is the drop back to LOW), goodput's follow
#      record and its decision lines. LOW=36, DIAL=0.7 by default: the band the change is for,
#      EAGLE-3 at 1.030x / 1.059x of plain at 36 requests on the H200 (session 38, `be`), a
#      switch on at 33-64 ~130 ms. Before the change goodput stayed plain after such a drop
#      (simulated, `policy_sim.py` descend lines).
#   rc | rs | ...: session 40's calls (`call_s40.sh`; rc first: the realized rate at 48 / 64).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s41.sh sv|ds|rc|rs|...
case "${1:-}" in
sv|ds) ;;
*) exec bash scripts/device/call_s40.sh "$@" ;;
esac
PREFILL_GRAPH=${PREFILL_GRAPH:-breakable}  # SGLang's default, which common.sh turns off otherwise
source scripts/device/common.sh
say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
DEADLINE_S=${DEADLINE_S:-560}

if [ "$1" = ds ]; then
  LOW=${LOW:-36} DIAL=${DIAL:-0.7}
  build_pair /tmp/soak-8b "dial:$DIAL" --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  say "model built; step load $LOW -> 128 -> $LOW, dial $DIAL"
  ( cd /tmp && python3 -m adaptive_spec.bench.cli sweep --pattern step --pattern-low "$LOW" \
      --pattern-high 128 --duration-s 75 --sample-interval-s 0.5 --new-tokens 192 \
      --prompt-len 40,128 --new-tokens-spread 0.5 --warmup-tokens 128 --drain-s 2 \
      --start-stagger-s 10 --start-timeout-s 300 --deadline-s $(( $(left) - 30 )) --quiet \
      --server-arg "--max-running-requests 260" --server-arg "--stream-interval 4" \
      --system-args "adaptive-spec:goodput=--adaptive-spec-policy goodput --adaptive-spec-log-decisions" \
      --target /tmp/soak-8b/target --draft "/tmp/soak-8b/draft-dial-$DIAL" --name "ds-dial-$DIAL" \
      --systems plain,eagle3,adaptive-spec:goodput --log-dir /tmp/logs-ds \
      --out "$OUT/sweep-ds-dial-$DIAL.json" ) > /tmp/sweep-ds.txt 2>&1
  tail -25 /tmp/sweep-ds.txt
  python3 - "$OUT/sweep-ds-dial-$DIAL.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d.get("rows", []):
    print(f"[ds] {r['system']:24s} phase {r.get('phase')} N={r.get('concurrency')} "
          f"{r.get('output_tok_s')} tok/s, running {r.get('mean_running')}")
for r in d["systems"].get("adaptive-spec:goodput", {}).get("final_status") or []:
    for e in r.get("follow") or []:
        print("[ds] follow", json.dumps(e))
PY
  grep -h "adaptive_spec decision" /tmp/logs-ds/*.log | tail -200 > "$OUT/ds-decisions.log"
  pack_logs logs-ds.tar.xz /tmp/logs-ds/*.log
  bash "$REPO/scripts/device/pack_out.sh" ds
  exit 0
fi

V=/tmp/serve-venv
mkdir -p "$V/bin"
printf '#!/bin/sh\nexec python3 "$@"\n' > "$V/bin/python"
printf '#!/bin/sh\nexec python3 -m adaptive_spec.launch_server "$@"\n' > "$V/bin/adaptive-spec-server"
chmod +x "$V/bin/python" "$V/bin/adaptive-spec-server"
touch "$V/.complete"
ADAPTIVE_SPEC_SERVE_VENV=$V ADAPTIVE_SPEC_MODELS=/tmp/serve-models \
  setsid bash scripts/serve.sh > "$OUT/serve.log" 2>&1 &
CUR_PID=$!
say "serve.sh started (pid $CUR_PID)"
up=0
for _ in $(seq 1 $(( $(left) - 60 ))); do
  curl -sf http://127.0.0.1:30000/health > /dev/null && { up=1; break; }
  kill -0 "$CUR_PID" 2> /dev/null || break
  sleep 1
done
if [ $up = 1 ]; then
  say "server up"
  REQ='{"input_ids": [128000, 791, 6460, 315, 9822, 374, 12366, 13, 578, 6460, 315],
        "sampling_params": {"max_new_tokens": 64, "temperature": 0}}'
  for i in 1 2; do
    curl -sf -m 60 http://127.0.0.1:30000/generate -H 'Content-Type: application/json' \
      -d "$REQ" > "$OUT/serve-generate-$i.json" || say "request $i failed"
  done
  python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
try:
    runs = [json.load(open(f"{out}/serve-generate-{i}.json")) for i in (1, 2)]
except (OSError, ValueError) as exc:
    sys.exit(f"[sv] no answer to read: {exc}")
ids = [r.get("output_ids") for r in runs]
print(f"[sv] {len(ids[0] or [])} tokens; the same both times: {ids[0] == ids[1]}; "
      f"meta: {json.dumps(runs[0].get('meta_info', {}))[:400]}")
json.dump(runs, open(f"{out}/serve-generate.json", "w"))
PY
  rm -f "$OUT"/serve-generate-[12].json
  curl -sf -m 10 http://127.0.0.1:30000/adaptive_spec/status > "$OUT/serve-status.json"
  curl -sf -m 10 http://127.0.0.1:30000/metrics | grep '^adaptive_spec' > "$OUT/serve-metrics.txt"
  say "status: $(head -c 600 "$OUT/serve-status.json")"
  say "our Prometheus series: $(cut -d'{' -f1 "$OUT/serve-metrics.txt" | cut -d' ' -f1 | sort -u | wc -l)"
else
  say "server not up"
fi
stop_server
tail -40 "$OUT/serve.log"
bash "$REPO/scripts/device/pack_out.sh" sv
