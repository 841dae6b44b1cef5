#!/usr/bin/env bash
# Session 45 (one GPU, H100 or H200).
#   lv (~6 min) session 44's `lv` with drafting forced on and forced off beside it: plain,
#      goodput, forced on (k = 3) and forced off at 64 requests (CONC), separate servers, 15-s
#      levels (LEVEL_S), one pass (PASSES), every one of ours logging its step-time samples
#      (SYSTEMS= a shorter list: forced off has read 0.992-0.999x of plain in every run since
#      session 39).
#      Two questions:
#      - whether the level's start is what costs goodput 4-5% at 64 (session 44, 6-s levels:
#        0.94-0.98x of plain; it arrived drafting from the drain and settled on plain 3-5 s in);
#        the arrivals and the decision lines, which carry the cost model's reading (`model=`);
#      - where the model's 3% goes: session 44's samples put k = 3 at 0.970x of plain where
#        EAGLE-3's server made 0.94x; at 60-64 running its k = 3 rows delivered 6,948 batch
#        tokens a second and its plain rows 6,762, where the plain server made 7,102. Servers
#        that run one k (forced on, forced off) account for their own throughput in their
#        samples (`sample_summary --coverage`); set beside what their clients measured and
#        SGLang's decode lines, that tells whether the samples miss time or tokens, and whether
#        goodput's plain steps cost more than a forced-off server's.
#   lv44 | il | sv | ds | r64 | rc | rs | fo | ...: sessions 37-44's calls (lv44: session 44's lv).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s45.sh lv|il|...
case "${1:-}" in
lv) ;;
lv44) exec bash scripts/device/call_s44.sh lv ;;
*) exec bash scripts/device/call_s44.sh "$@" ;;
esac
PREFILL_GRAPH=${PREFILL_GRAPH:-breakable}  # SGLang's default, which common.sh turns off otherwise
source scripts/device/common.sh
say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"  # RUN_FLAGS add its decision log
dense_pinned_setup lv
export ADAPTIVE_SPEC_SAMPLE_LOG=1
sweep 0 lv-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
  "${SYSTEMS:-plain,adaptive-spec:goodput,adaptive-spec:forced-on,adaptive-spec:forced-off}" \
  --concurrency "${CONC:-64}" --repeat "${PASSES:-1}" --time-budget-s "${LEVEL_S:-15}" \
  --time-budget-from "${CONC:-64}:${LEVEL_S:-15}" --start-timeout-s 300 \
  --system-args "$GOODPUT" > /tmp/tail-lv.txt
keep_ours_logs lv
report lv- logs-lv.tar.xz /tmp/tail-lv.txt
goodput_paired "$OUT"/sweep-lv-dense.json plain adaptive-spec:forced-on adaptive-spec:forced-off
for s in forced-on forced-off; do
  for of in plain adaptive-spec:forced-off; do
    ( cd /tmp && python3 -m adaptive_spec.bench.cli paired "$OUT"/sweep-lv-dense.json \
        --system "adaptive-spec:$s" --of "$of" ) 2>&1 | tail -2
  done
done
( cd /tmp && python3 -m adaptive_spec.bench.sample_summary --coverage --batch 57-64 \
    "$OUT"/samples-lv-*.txt
  python3 -m adaptive_spec.bench.sample_summary --coverage "$OUT"/samples-lv-*.txt
  python3 -m adaptive_spec.bench.sample_summary --realized "$OUT"/samples-lv-*.txt
  python3 -m adaptive_spec.bench.sample_summary --arrivals "$OUT/samples-lv-goodput.txt" ) 2>&1 \
  | tail -80
# SGLang's own account beside the clients' and the samples': its decode log lines' median gen
# throughput per running level, per server (log_throughput.py)
( cd /tmp && python3 -m adaptive_spec.bench.log_throughput /tmp/logs-lv-dense/server-*.log ) \
  | grep -E "^log,|,${CONC:-64},"
grep -o "model=[^ ]*\( held=[^ ]*\)\?" "$OUT/decisions-lv.log" | sort | uniq -c | sort -rn \
  | head -12
goodput_cost_model "$OUT"/sweep-lv-dense.json
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" lv
