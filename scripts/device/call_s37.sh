#!/usr/bin/env bash
# Session 37 (written without a GPU: none was lent that session; run it in a later one). One
# H200, SGLang's defaults (breakable prefill CUDA graphs on every server), dense 8B pair,
# --stream-interval 4, schedulers pinned, lossless checked per row.
#   k7 (~9 min) longer chains in the crossover band: on this GPU drafting at all costs a fixed
#      amount and each further draft step little (session 36's final table: k = 1 +3.5 ms, then
#      ~0.4 ms a step at 16 requests), so at dial 0.7 a 5-6-step chain should make 6-8% more
#      than SGLang's usual 3 at 4-32 requests (tests/unit/test_goodput_policy.py,
#      test_with_seven_steps_allowed_it_finds_the_chain_length_that_pays: simulated). Plain,
#      eagle3 at 7 steps (the results schema's eagle3: same steps as our largest), goodput with
#      up to 7, and static EAGLE-3 at 3 steps as our forced-on server (>= 0.98x of SGLang's
#      static EAGLE-3 since session 18) at 16, 32 and 64 requests, 2 passes. Read with
#      `adaptive-spec-bench paired FILE --system adaptive-spec:goodput
#      --of envelope,adaptive-spec:forced-on` (the best static configuration in each repeat).
#   k9 (~9 min) the same with the dial-0.9 draft at 16, 64 and 128 (session 6, before every fix
#      since: 1.08-1.44x of max(plain, eagle3 at 3) at 1-128 with up to 7 steps).
#   kb (~9 min) issue 5's "higher than SGLang's built-in adaptive mode at every concurrency" at
#      the low end, where the built-in mode drafts 7 steps (its default config) and our sweeps ran
#      3 since session 7: plain, eagle3 at 7, builtin-adaptive and goodput with up to 7 at 1, 4
#      and 16 requests, dial 0.7, 2 passes (`paired ... --of builtin-adaptive`).
#   lc | dl: session 36's long-context and other-drafts runs (call_s36.sh; not run yet).
# Usage (repo root, .bundle and .device carried): bash scripts/device/call_s37.sh k7|k9|kb|lc|dl
case "${1:-}" in
lc|dl) exec bash scripts/device/call_s36.sh "$1" ;;
esac
PREFILL_GRAPH=${PREFILL_GRAPH:-breakable}  # SGLang's default, which common.sh turns off otherwise
source scripts/device/common.sh

say "code digest ${ADAPTIVE_SPEC_CODE_DIGEST:-unknown}"
GOODPUT="adaptive-spec:goodput=--adaptive-spec-policy goodput"
FOUR7=plain,eagle3,adaptive-spec:goodput,adaptive-spec:forced-on
LONG=(--spec-steps 7 --system-steps adaptive-spec:forced-on=3)

long_chains() {  # $1 mode, $2 draft name (dial-0.7 | dial-0.9), $3 concurrencies
  sweep 0 $1-dense /tmp/soak-8b/target /tmp/soak-8b/draft-$2 $FOUR7 --concurrency $3 \
    --repeat 2 --time-budget-s 6 --start-timeout-s 360 --system-args "$GOODPUT" "${LONG[@]}" \
    > /tmp/tail-$1.txt
  report $1- logs-$1.tar.xz /tmp/tail-$1.txt
  goodput_paired "$OUT"/sweep-$1-dense.json envelope envelope,adaptive-spec:forced-on
  phases /tmp/logs-$1-dense --bands 48-95,24-47,12-24 --max-ms-per-step 60 | tail -12
  goodput_cost_model "$OUT"/sweep-$1-dense.json
}

case "${1:-}" in
k7)
  dense_pinned_setup $1
  long_chains k7 dial-0.7 16,32,64
  ;;
k9)
  dense_pinned_setup $1
  build_pair /tmp/soak-8b dial:0.9 --preset 8b || { tail -30 "$OUT/build.log"; exit 3; }
  long_chains k9 dial-0.9 16,64,128
  ;;
kb)
  dense_pinned_setup $1
  sweep 0 kb-dense /tmp/soak-8b/target /tmp/soak-8b/draft-dial-0.7 \
    plain,eagle3,builtin-adaptive,adaptive-spec:goodput --concurrency 1,4,16 --repeat 2 \
    --time-budget-s 6 --start-timeout-s 360 --system-args "$GOODPUT" --spec-steps 7 \
    > /tmp/tail-kb.txt
  report kb- logs-kb.tar.xz /tmp/tail-kb.txt
  goodput_paired "$OUT"/sweep-kb-dense.json builtin-adaptive envelope
  goodput_cost_model "$OUT"/sweep-kb-dense.json
  ;;
*)
  say "usage: $0 k7|k9|kb|lc|dl"; exit 2
  ;;
esac
rm -f "$OUT/build.log"
bash "$REPO/scripts/device/pack_out.sh" "$1"
