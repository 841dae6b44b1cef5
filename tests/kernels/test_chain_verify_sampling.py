"""Sampling chain verify (CPU, TRITON_INTERPRET=1).

- per coin: the kernel's outputs equal the torch reference's (float64 probabilities, SGLang's
  target-only / classic semantics) for temperature, top-k, top-p, both, min-p, thresholds and
  classic rejection sampling, and equal SGLang's own Triton rejection-sampling kernel;
- distribution, exactly: the kernel is a deterministic function of its uniforms, so its
  acceptance thresholds and the CDF intervals of its bonus token are measured by probing
  coins just inside/outside the reference's breakpoints; this bounds the difference between
  the kernel's and the reference's outcome distributions by 1e-4 per cell;
- distribution, Monte Carlo: chi-square of (accepted drafts, bonus token) over random coins
  at a fixed seed against the exact distribution, plus a control that the same statistic
  rejects a distribution moved by 10%.  (The interpreter runs ~30 ms per request, so the
  Monte-Carlo sample here is 800 requests; the 1%-level check is the probing test above and
  the GPU chi-square in benchmarks/kernel_bench.py.)
"""

import pytest
import torch

from .helpers import sglang_chain_sampling_classic

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _case(bsz, d, v, dtype=torch.bfloat16, seed=0):
    """LLM-like rows (a boosted token per row) and drafts sampled from the target."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(bsz * d, v, generator=g) * 3
    logits[torch.arange(bsz * d), torch.randint(0, v, (bsz * d,), generator=g)] += 6
    logits = logits.to(dtype)
    p = torch.softmax(logits.float(), -1)
    cand = torch.zeros(bsz, d, dtype=torch.int64)
    cand[:, 0] = torch.randint(0, v, (bsz,), generator=g)
    cand[:, 1:] = torch.multinomial(p, 1, generator=g).reshape(bsz, d)[:, :-1]
    coins = torch.rand(bsz, d, generator=g)
    coins_final = torch.rand(bsz, generator=g)
    return logits, cand, coins, coins_final, g


def _agreement(out, expected, bsz, d):
    same = 0
    for b in range(bsz):
        same += bool(torch.equal(out[0].reshape(bsz, d)[b], expected[0].reshape(bsz, d)[b])
                     and torch.equal(out[1][b], expected[1][b]) and out[2][b] == expected[2][b])
    return same


CONFIGS = {
    "temperature": dict(),
    "top_p": dict(top_ps="p"),
    "top_k": dict(top_ks="k"),
    "top_k+top_p": dict(top_ks="k", top_ps="p"),
    "min_p": dict(min_ps="m"),
    "top_p+thresholds": dict(top_ps="p", threshold_single=0.3, threshold_acc=0.5),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_sampling_per_coin_matches_reference(cv, ref, name):
    bsz, d, v = 24, 4, 150
    logits, cand, coins, cf, g = _case(bsz, d, v, seed=100 + list(CONFIGS).index(name))
    cfg = dict(CONFIGS[name])
    kw = {"temperatures": torch.rand(bsz, generator=g) + 0.5}
    if cfg.pop("top_ps", None):
        kw["top_ps"] = torch.rand(bsz, generator=g) * 0.9 + 0.05
        kw["top_ps"][:3] = 1.0  # off for some requests of the batch
    if cfg.pop("top_ks", None):
        kw["top_ks"] = torch.randint(1, 40, (bsz,), generator=g)
        kw["top_ks"][:2] = torch.tensor([-1, v])  # off
    if cfg.pop("min_ps", None):
        kw["min_ps"] = torch.rand(bsz, generator=g) * 0.2
    # [4, 8] tiles (4 vectors per lane) in the streaming passes; top-p's exact threshold
    # (the default rejection draw is tested below)
    out = cv.chain_verify_sampling(logits, cand, coins, cf, **kw, **cfg, block_size=32, lanes=8,
                                   cap=16, top_p_method="exact")
    p = ref.renorm_probs_ref(logits, rows_per_request=d, **kw)
    expected = ref.chain_verify_sampling_ref(p, cand, coins, cf, **cfg)
    assert _agreement(out, expected, bsz, d) == bsz
    # outputs the contract promises, whatever the coins
    assert out[0].dtype == out[1].dtype == out[2].dtype == torch.int32
    for b in range(bsz):
        n = int(out[2][b])
        assert out[1][b, : n + 1].tolist() == [b * d + j for j in range(n + 1)]
        assert out[1][b, n + 1:].eq(-1).all()
        assert out[0][b * d + n + 1:(b + 1) * d].eq(0).all()
        assert out[0][b * d:b * d + n].tolist() == cand[b, 1:n + 1].tolist()
    # the batch exercises both acceptance and rejection
    assert 0 < out[2].float().mean() < d - 1


def test_top_p_rejection_draw_same_decisions_tokens_in_the_nucleus(cv, ref):
    """Top-p alone, default method (the residual token drawn by rejection): per coin the same
    accepted drafts as the reference, every bonus token inside the renormalised nucleus
    (never a padding token of -inf logits), and the exact method still equals the
    reference token for token. Split 3: slices [0, 64), [64, 128), [128, 150), the last all
    padding, so the draw's scan starts from the slice stats with an empty slice among them."""
    bsz, d, v = 24, 4, 150
    logits, cand, coins, cf, g = _case(bsz, d, v, dtype=torch.float32, seed=31)
    logits[:, 128:] = float("-inf")
    cand[:, 1:] = cand[:, 1:] % 128  # drafts among the real tokens
    kw = dict(temperatures=torch.rand(bsz, generator=g) + 0.5,
              top_ps=torch.rand(bsz, generator=g) * 0.9 + 0.05)
    p = ref.renorm_probs_ref(logits, rows_per_request=d, **kw)
    expected = ref.chain_verify_sampling_ref(p, cand, coins, cf)
    for split in (0, None, 3):
        out = cv.chain_verify_sampling(logits, cand, coins, cf, **kw, block_size=32, lanes=8,
                                       split_stats=split)
        assert out[2].tolist() == expected[2].tolist()
        for b in range(bsz):
            n = int(out[2][b])
            assert out[0][b * d:b * d + n].tolist() == cand[b, 1:n + 1].tolist()
            bonus = int(out[0][b * d + n])
            assert p[b * d + n, bonus] > 0, (b, n, bonus)
            if n < d - 1:
                assert bonus != int(cand[b, n + 1])  # the rejected draft is not redrawn
        exact = cv.chain_verify_sampling(logits, cand, coins, cf, **kw, block_size=32, lanes=8,
                                         split_stats=split, top_p_method="exact")
        assert _agreement(exact, expected, bsz, d) == bsz
    assert 0 < expected[2].float().mean() < d - 1


def _edge_and_window_case():
    """One draft per request (D = 2), float32 logits, temperature 1, coins that need the
    renormalised p'(d) (the band p(d) < coin <= p(d) / top_p, and just either side of p'(d)):
    - requests 0-7: a dominant draft, p(d) > top_p (the nucleus is the draft alone);
    - 8-11: the draft and two tokens of exactly its logit below one larger token, top_p
      inside the three ties' mass (the nucleus ends on the ties: all three kept);
    - 12-23: a flat row whose draft is its largest token inside a nucleus of dozens of tokens
      (the threshold search's bisection runs before the settling probe)."""
    g = torch.Generator().manual_seed(77)
    bsz, d, v = 24, 2, 300
    logits = torch.randn(bsz * d, v, generator=g)
    cand = torch.zeros(bsz, d, dtype=torch.int64)
    top_ps = torch.empty(bsz)
    for b in range(bsz):
        r, tok = b * d, int(torch.randint(0, v, (1,), generator=g))
        cand[b, 1] = tok
        if b < 8:
            logits[r, tok] += 9.0
            top_ps[b] = 0.5 + 0.05 * b
        elif b < 12:
            logits[r] = logits[r] * 0.5 - 4.0
            ties = [(tok + 1 + i) % v for i in range(2)]
            logits[r, tok] = 2.5
            logits[r, ties] = 2.5
            logits[r, (tok + 7) % v] = 3.0
            p = torch.softmax(logits[r].double(), -1)
            top_ps[b] = float(p[(tok + 7) % v] + (0.5 + 0.6 * (b - 8) / 4) * p[tok])
        else:
            logits[r] = logits[r] * 0.6
            logits[r, tok] = float(logits[r].max()) + 0.3
            top_ps[b] = 0.9
    coins = torch.rand(bsz, d, generator=g)
    cf = torch.rand(bsz, generator=g)
    return logits, cand, coins, cf, top_ps


def test_top_p_edge_and_settling_probe_decide_as_the_reference(cv, ref):
    """The two shortcuts to p'(d) for a draft the nucleus keeps: a draft at the nucleus edge
    (its threshold and mass read from the first pass: ties of the draft's value counted) and a
    threshold search stopped by a probe that already bounds the kept mass. Coins in the band
    and a hair either side of the reference's p'(d): the decisions must be the reference's,
    with the first pass inline and split; the exact method's bonus tokens too."""
    logits, cand, coins, cf, top_ps = _edge_and_window_case()
    bsz, d, v = cand.shape[0], 2, logits.shape[1]
    p = ref.renorm_probs_ref(logits, top_ps=top_ps, rows_per_request=d)
    pd_raw = torch.softmax(logits.double(), -1)[torch.arange(0, bsz * d, d), cand[:, 1]]
    pd_kept = p[torch.arange(0, bsz * d, d), cand[:, 1]]
    assert (pd_kept > 0).all()  # every draft kept by its nucleus
    assert (pd_kept[8:12] < 0.99).all() and (p[24] > 0).sum() > 16  # ties / a long nucleus
    for trial, place in enumerate(("band", "below", "above")):
        c = coins.clone()
        if place == "band":
            hi = torch.clamp(pd_raw / top_ps.double(), max=1.0)
            c[:, 0] = (pd_raw + (hi - pd_raw) * coins[:, 0].double()).float()
        else:
            c[:, 0] = (pd_kept * (1 - 1e-3 if place == "below" else 1 + 1e-3)).clamp(max=0.9999).float()
        expected = ref.chain_verify_sampling_ref(p, cand, c, cf)
        if place == "below":
            assert expected[2].eq(1).all()
        if place == "above":
            assert expected[2][pd_kept < 0.999].eq(0).all()
        for split in (0, 3):
            kw = dict(top_ps=top_ps, block_size=32, lanes=8, cap=16, split_stats=split)
            out = cv.chain_verify_sampling(logits, cand, c, cf, top_p_method="exact", **kw)
            assert _agreement(out, expected, bsz, d) == bsz, (place, split)
            out = cv.chain_verify_sampling(logits, cand, c, cf, **kw)
            assert out[2].tolist() == expected[2].tolist(), (place, split)
            for b in range(bsz):
                n = int(out[2][b])
                assert p[b * d + n, int(out[0][b * d + n])] > 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_sampling_dtypes_and_search_paths(cv, ref, dtype):
    """Flat rows (big nucleus: several bisection passes before the exact rank, cap=16) and
    peaked ones, fp32/fp16 logits, large block (one block per row) and small block."""
    bsz, d, v = 8, 3, 300
    logits, cand, coins, cf, g = _case(bsz, d, v, dtype=dtype, seed=5)
    logits[: 4 * d] = (torch.randn(4 * d, v, generator=g) * 0.3).to(dtype)  # flat rows
    kw = dict(temperatures=torch.rand(bsz, generator=g) + 0.5,
              top_ps=torch.rand(bsz, generator=g) * 0.8 + 0.1,
              top_ks=torch.randint(100, 280, (bsz,), generator=g))
    coins[:, :] = torch.rand(bsz, d, generator=g) * 0.5 + 0.5  # mostly the exact (slow) path
    p = ref.renorm_probs_ref(logits, rows_per_request=d, **kw)
    expected = ref.chain_verify_sampling_ref(p, cand, coins, cf)
    # split_stats: the first pass in the per-row kernel (0), or split over 3 vocab slices in
    # its own launch (the default picks the count)
    for block, lanes, split in ((32, 32, 0), (32, 32, 3), (512, 128, None)):
        out = cv.chain_verify_sampling(logits, cand, coins, cf, **kw, block_size=block,
                                       lanes=lanes, cap=16, split_stats=split)
        assert _agreement(out, expected, bsz, d) == bsz, f"block={block} split={split}"


def test_sampling_top_k1_is_greedy(cv, ref):
    """top_k = 1 (how SGLang encodes greedy requests in a sampling batch) gives the greedy result."""
    bsz, d, v = 16, 4, 120
    logits, cand, coins, cf, g = _case(bsz, d, v, dtype=torch.float32, seed=3)
    target = logits.argmax(-1).reshape(bsz, d)
    acc = torch.randint(0, d, (bsz,), generator=g)
    for b in range(bsz):
        cand[b, 1:int(acc[b]) + 1] = target[b, :int(acc[b])]
    out = cv.chain_verify_sampling(logits, cand, coins, cf, temperatures=torch.rand(bsz) + 0.3,
                                   top_ks=torch.ones(bsz, dtype=torch.int32), block_size=32)
    expected = ref.chain_verify_greedy_ref(logits, cand)
    for a, e in zip(out, expected):
        assert torch.equal(a, e)


def test_classic_rejection_matches_reference_and_sglang(cv, ref):
    bsz, d, v = 24, 4, 130
    logits, cand, coins, cf, g = _case(bsz, d, v, seed=11)
    temps = torch.rand(bsz, generator=g) + 0.5
    tps = torch.rand(bsz, generator=g) * 0.5 + 0.5
    q = torch.softmax(torch.randn(bsz, d - 1, v, generator=g) * 2, -1)
    # drafts drawn from q, as a real proposal would be
    cand[:, 1:] = torch.multinomial(q.reshape(-1, v), 1, generator=g).reshape(bsz, d - 1)
    out = cv.chain_verify_sampling(logits, cand, coins, cf, temperatures=temps, top_ps=tps,
                                   draft_probs=q, block_size=32, lanes=16, cap=16)
    p = ref.renorm_probs_ref(logits, temps, None, tps, rows_per_request=d)
    expected = ref.chain_verify_sampling_ref(p, cand, coins, cf, draft_probs=q)
    assert _agreement(out, expected, bsz, d) == bsz
    sgl = sglang_chain_sampling_classic(p.to(torch.float32).reshape(bsz, d, v), cand, coins, cf,
                                        q.contiguous())
    assert _agreement(out, sgl, bsz, d) >= bsz - 1  # fp32 vs fp64 probabilities at a boundary
    assert 0 < out[2].float().mean() < d - 1


def test_rows_after_rejection_are_not_needed(cv, ref):
    bsz, d, v = 6, 4, 90
    logits, cand, coins, cf, _ = _case(bsz, d, v, dtype=torch.float32, seed=2)
    kw = dict(temperatures=torch.full((bsz,), 0.9), top_ps=torch.full((bsz,), 0.8))
    p = ref.renorm_probs_ref(logits, rows_per_request=d, **kw)
    expected = ref.chain_verify_sampling_ref(p, cand, coins, cf)
    for b in range(bsz):
        n = int(expected[2][b])
        logits[b * d + n + 1:(b + 1) * d] = float("nan")
    out = cv.chain_verify_sampling(logits, cand, coins, cf, **kw, block_size=32,
                                   top_p_method="exact")
    assert _agreement(out, expected, bsz, d) == bsz
    # the rejection draw reads no row past the rejection either: same decisions, clean tokens
    out = cv.chain_verify_sampling(logits, cand, coins, cf, **kw, block_size=32)
    assert out[2].tolist() == expected[2].tolist()
    assert all(p[b * d + int(out[2][b]), int(out[0][b * d + int(out[2][b])])] > 0
               for b in range(bsz))


def test_padded_vocabulary_of_minus_inf_logits(cv, ref):
    """Models pad the vocabulary with -inf logits: whole vocab slices of the split first pass
    then hold nothing (max -inf, normaliser 0) and must not poison the row's combined stats."""
    bsz, d, v = 4, 3, 96
    logits, cand, coins, cf, g = _case(bsz, d, v, dtype=torch.float32, seed=9)
    logits[:, 60:] = float("-inf")
    cand[:, 1:] = torch.multinomial(torch.softmax(logits, -1), 1, generator=g).reshape(bsz, d)[:, :-1]
    kw = dict(temperatures=torch.full((bsz,), 0.8), top_ps=torch.full((bsz,), 0.9))
    p = ref.renorm_probs_ref(logits, rows_per_request=d, **kw)
    expected = ref.chain_verify_sampling_ref(p, cand, coins, cf)
    for split in (0, 3):  # slice 3 of 3 is all -inf
        out = cv.chain_verify_sampling(logits, cand, coins, cf, **kw, block_size=32,
                                       split_stats=split, top_p_method="exact")
        assert _agreement(out, expected, bsz, d) == bsz, f"split={split}"
        assert int(out[0].max()) < 60  # never a padding token


# ----------------------------------------------------------------------------- distribution

def _chain(ref, v=12, d=3, seed=21, top_k=9):
    g = torch.Generator().manual_seed(seed)
    logits = (torch.randn(d, v, generator=g) * 1.5).to(torch.float32)
    kw = dict(temperatures=0.8, top_ks=top_k, top_ps=0.85)
    if top_k is None:
        del kw["top_ks"]
    p = ref.renorm_probs_ref(logits, **kw)
    # drafts: the 2nd most likely kept token of each row (so acceptance is neither 0 nor 1)
    drafts = [int(torch.argsort(p[j], descending=True)[1]) for j in range(d - 1)]
    return logits, kw, p, drafts


def test_sampling_distribution_exact_probe(cv, ref):
    """Measure the kernel's outcome distribution exactly by probing its coin thresholds."""
    d, v = 3, 12
    logits, kw, p, drafts = _chain(ref, v, d)
    eps = 1e-4
    cases = []  # (coins row, final coin, expected accepted, expected bonus)
    for j in range(d - 1):
        alpha = float(p[j, drafts[j]])
        assert 0.05 < alpha < 0.95
        for coin, accepted in ((alpha - eps, True), (alpha + eps, False)):
            c = [0.0] * d
            c[j] = coin
            cases.append((c, 0.5, None, None, j, accepted))
    # bonus CDFs after a rejection at row j (coin 1 - tiny rejects), and after all accepted
    for j in range(d):
        w = p[j].clone()
        c = [0.0] * d
        if j < d - 1:
            w[drafts[j]] = 0.0
            c[j] = 1.0 - 1e-7
        cdf = torch.cumsum(w / w.sum(), 0)
        lo = 0.0
        for t in range(v):
            hi = float(cdf[t])
            if hi - lo > 2 * eps:
                for u in (lo + eps, (lo + hi) / 2, hi - eps):
                    cases.append((c, u, j, t, None, None))
            lo = hi
    n = len(cases)
    logits_b = logits.repeat(n, 1)
    cand = torch.zeros(n, d, dtype=torch.int64)
    cand[:, 1:] = torch.tensor(drafts)
    coins = torch.tensor([c[0] for c in cases], dtype=torch.float32)
    cf = torch.tensor([c[1] for c in cases], dtype=torch.float32)
    out = cv.chain_verify_sampling(logits_b, cand, coins, cf, temperatures=kw["temperatures"],
                                   top_ks=kw["top_ks"], top_ps=kw["top_ps"], block_size=16, cap=16)
    n_acc = out[2].tolist()
    bonus = [int(out[0][i * d + n_acc[i]]) for i in range(n)]
    for i, (_, u, j_exp, t_exp, j_probe, accepted) in enumerate(cases):
        if j_probe is not None:
            # accepted at probe row j <=> more than j drafts accepted
            assert (n_acc[i] > j_probe) == accepted, (i, cases[i], n_acc[i])
        else:
            assert n_acc[i] == j_exp and bonus[i] == t_exp, (i, u, j_exp, t_exp, n_acc[i], bonus[i])


def _chi2_sf(stat, dof):
    return float(torch.special.gammaincc(torch.tensor(dof / 2.0, dtype=torch.float64),
                                         torch.tensor(stat / 2.0, dtype=torch.float64)))


def _chi2(counts, probs, n):
    """Pearson chi-square over cells, merging cells with expected count < 5 into one."""
    exp = probs * n
    big = exp >= 5
    obs_c = list(counts[big]) + [counts[~big].sum()]
    exp_c = list(exp[big]) + [exp[~big].sum()]
    stat = sum((o - e) ** 2 / e for o, e in zip(obs_c, exp_c) if e > 0)
    dof = sum(1 for e in exp_c if e > 0) - 1
    return float(stat), dof


@pytest.mark.parametrize("top_k,split,block", [(9, None, 16), (None, 0, 16), (None, 3, 4)],
                         ids=["top_k+top_p:threshold-search", "top_p:rejection-draw",
                              "top_p:rejection-draw-from-slice"])
def test_sampling_distribution_chi_square(cv, ref, top_k, split, block):
    """top-k + top-p finds the nucleus threshold; top-p alone draws by rejection (its bonus
    tokens are not a function of the final coin alone, so this is its distribution test),
    with the scan walking the whole row (split 0) or starting in the slice the split stats
    point at (3 slices of 4 tokens)."""
    d, v = 3, 12
    logits, kw, p, drafts = _chain(ref, v, d, top_k=top_k)
    n = 800
    g = torch.Generator().manual_seed(99)
    cand = torch.zeros(n, d, dtype=torch.int64)
    cand[:, 1:] = torch.tensor(drafts)
    out = cv.chain_verify_sampling(logits.repeat(n, 1), cand, torch.rand(n, d, generator=g),
                                   torch.rand(n, generator=g), temperatures=kw["temperatures"],
                                   top_ks=kw.get("top_ks"), top_ps=kw["top_ps"],
                                   block_size=block, lanes=min(block, 16), cap=16,
                                   split_stats=split)
    n_acc = out[2].long()
    bonus = out[0].reshape(n, d).gather(1, n_acc[:, None]).squeeze(1).long()
    counts = torch.zeros(d, v, dtype=torch.float64)
    counts.index_put_((n_acc, bonus), torch.ones(n, dtype=torch.float64), accumulate=True)
    _, joint = ref.chain_outcome_distribution(p, drafts)
    assert counts[joint == 0].sum() == 0  # never an impossible outcome
    stat, dof = _chi2(counts.flatten(), joint.flatten(), n)
    assert _chi2_sf(stat, dof) > 1e-3, (stat, dof)
    # acceptance-length marginal
    stat_a, dof_a = _chi2(counts.sum(1), joint.sum(1), n)
    assert _chi2_sf(stat_a, dof_a) > 1e-3, (stat_a, dof_a)
    # control: the same statistic rejects a distribution with 10% of the mass moved
    shifted = joint.clone()
    moved = 0.1 * shifted[0].sum()
    shifted[0] *= 0.9
    shifted[d - 1] += moved * shifted[d - 1] / shifted[d - 1].sum()
    stat_s, dof_s = _chi2(counts.flatten(), shifted.flatten(), n)
    assert _chi2_sf(stat_s, dof_s) < 1e-3, (stat_s, dof_s)


def test_sampling_deterministic_given_coins(cv):
    bsz, d, v = 8, 3, 64
    logits, cand, coins, cf, _ = _case(bsz, d, v, seed=4)
    kw = dict(temperatures=0.7, top_ps=0.9, block_size=16, cap=16)
    a = cv.chain_verify_sampling(logits, cand, coins, cf, **kw)
    b = cv.chain_verify_sampling(logits, cand, coins, cf, **kw)
    for x, y in zip(a, b):
        assert torch.equal(x, y)


def test_sampling_input_validation(cv):
    logits = torch.randn(8, 10)
    cand = torch.zeros(2, 4, dtype=torch.int64)
    with pytest.raises(ValueError):
        cv.chain_verify_sampling(logits, cand, torch.rand(2, 4, dtype=torch.float64), torch.rand(2))
    with pytest.raises(ValueError):
        cv.chain_verify_sampling(logits, cand, torch.rand(2, 4), torch.rand(3))
    with pytest.raises(ValueError):
        cv.chain_verify_sampling(logits, cand, torch.rand(2, 4), torch.rand(2),
                                 draft_probs=torch.rand(2, 3, 11))
    with pytest.raises(ValueError):
        cv.chain_verify_sampling(logits, cand, torch.rand(2, 4), torch.rand(2), top_ps=torch.rand(3))
