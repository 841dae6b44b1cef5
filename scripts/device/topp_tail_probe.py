"""Where does the top-p sampling verify's GPU time go? (issue 6; GPU machine, one H200)

Session 11 measured our top-p chain verify at 322 us of GPU time at B = 64, k = 3, V = 128256
(temperature 0.7 + top-p 0.9, drafts sampled from the target) against 128 us with temperature
alone. Hypothesis (session 19, not yet measured): the per-row kernel holds ~230 registers per
thread at 8 warps, so one program fits per SM and 256 rows run in two waves; a row whose coin
falls in the top-p band (p(d) < coin <= p(d) / top_p) or whose residual draws miss the nucleus
4 times takes the exact threshold search (10-16 passes over the row by ONE program), and one
such row per wave sets the kernel's time.

For several input draws this prints, per draw: how many rows are band rows (all, and those up
to each request's first non-accepted row), the expected number of residual-draw fallbacks over
every rejected row (a program runs its row even past its request's first rejection when it
started before that rejection was flagged), and the per-call GPU time (calls replayed from a
CUDA graph) of:
  A  the default (top-p by rejection), the draw's coins
  E  the same with every band coin moved down to p(d) (band rows accepted on the fast path)
  B  every draft coin 1e-7 (kept drafts accepted on the fast path, drafts outside the nucleus
     rejected: mostly bonus rows sample)
  X  top_p_method="exact" (every sampled row searches the threshold)
  T  temperature alone (no top-p)
Session 19's run (2026-12-01-s19-topp-tail-probe.txt) had E moving band coins UP to just above
p(d) / top_p (turning accepted band rows into rejections whose residual draws then miss when
the draft holds most of the nucleus) and B's coins at exactly 0 (a draft outside the nucleus
then has coin == bound and takes the exact path), so its E and B columns isolate neither; its
A column was 139-453 us across 5 draws (T 111-132, X 385-762): a few rows on the exact path
set the time.
Usage (after common.sh set PYTHONPATH): python3 scripts/device/topp_tail_probe.py [draws]
"""

import sys

import torch

from adaptive_spec.bench import kernel_bench as kb  # its input generators and graph timer
from adaptive_spec.kernels import chain_verify as cv

BSZ, STEPS, VOCAB, TEMP, TOP_P = 64, 3, 128256, 0.7, 0.9


def row_facts(logits, cand, coins):
    """Per draft row (float64 on the GPU): p(d), whether d is in the nucleus, the band flag,
    and the chance that one residual draw lands in the nucleus."""
    d = STEPS + 1
    rows = logits.reshape(BSZ, d, -1)[:, :-1].double() / TEMP
    p = torch.softmax(rows, dim=-1)
    drafts = cand[:, 1:]
    pd = p.gather(-1, drafts.unsqueeze(-1)).squeeze(-1)
    above = (p * (p > pd.unsqueeze(-1))).sum(-1)  # mass strictly above the draft
    kept = above < TOP_P
    # nucleus mass: tokens whose mass strictly above is < top_p (sorted prefix, ties kept)
    srt = torch.sort(p, dim=-1, descending=True).values
    before = torch.cumsum(srt, dim=-1) - srt
    e_kept = (srt * (before < TOP_P)).sum(-1)
    c = coins[:, :STEPS].double()
    band = kept & (c > pd) & (c <= pd / TOP_P)
    hit = (e_kept - torch.where(kept, pd, torch.zeros_like(pd))) / (1 - pd)
    return pd, kept, band, hit


def main(draws: int, dev: str = "cuda") -> None:
    dev = torch.device(dev)
    temps = torch.full((BSZ, 1), TEMP, device=dev)
    tps = torch.full((BSZ,), TOP_P, device=dev)
    print(f"B={BSZ} k={STEPS} V={VOCAB} T={TEMP} top_p={TOP_P}; per-call GPU us (graph of 10 calls)")
    print("draw band(all) band(reached) E[draw fallbacks]   A      E      B      X      T")
    for seed in range(draws):
        gen = torch.Generator(device=dev).manual_seed(1000 + seed)
        logits = kb._llm_like_logits(BSZ * (STEPS + 1), VOCAB, dev, gen)
        cand = kb._sampled_drafts(logits, BSZ, STEPS + 1, TEMP, gen)
        coins = torch.rand(BSZ, STEPS + 1, device=dev, generator=gen)
        coins_f = torch.rand(BSZ, device=dev, generator=gen)
        pd, kept, band, hit = row_facts(logits, cand, coins)
        fast = kept & (coins[:, :STEPS].double() <= pd)
        first_out = torch.where(~fast, torch.arange(STEPS, device=dev), STEPS).min(-1).values
        reached = torch.arange(STEPS, device=dev).unsqueeze(0) <= first_out.unsqueeze(1)
        # each rejected row draws up to 4 times; all missing sends it to the exact path
        # (rows past a request's first rejection included: their programs may run anyway)
        rejected = (~fast) & (~band)
        fallbacks = float(((1 - hit).clamp(min=0) ** 4 * rejected).sum())
        no_band = coins.clone()
        no_band[:, :STEPS] = torch.where(band, (pd * (1 - 1e-6)).float(), coins[:, :STEPS])
        zero = coins.clone()
        zero[:, :STEPS] = 1e-7

        def call(c, top_ps=tps, method=None):
            return lambda: cv.chain_verify_sampling(logits, cand, c, coins_f, temperatures=temps,
                                                    top_ps=top_ps, top_p_method=method)

        times = [kb._graph_us(f, calls=10) for f in (
            call(coins), call(no_band), call(zero), call(coins, method="exact"),
            call(coins, top_ps=None))]
        print(f"{seed:>4} {int(band.sum()):>9} {int((band & reached).sum()):>13} "
              f"{fallbacks:>17.2f} " + " ".join(f"{t:>6.1f}" for t in times))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
