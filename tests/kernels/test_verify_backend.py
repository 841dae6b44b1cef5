"""install_verify_backend: patching, fall-through, and equivalence with SGLang 0.5.16's own
``eagle_sample`` (greedy: SGLang's function with its Triton verify kernel; sampling: the
reference with the same coins), on CPU tensors under TRITON_INTERPRET=1."""
import importlib
from types import SimpleNamespace

import pytest
import torch

from .helpers import chain_tree, interpreted, ragged_greedy_case

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def vb(cv):
    mod = importlib.import_module("adaptive_spec.sglang_plugin.verify_backend")
    yield mod
    mod.install_verify_backend("sglang")
    mod._allow_cpu = False


def _inputs(bsz, d, v, greedy=True, topk=1, dtype=torch.bfloat16, seed=0, **sampling):
    logits, cand, _ = ragged_greedy_case(bsz, d, v, dtype=dtype, gen=torch.Generator().manual_seed(seed))
    idx, nxt, sib = chain_tree(bsz, d)
    verify_input = SimpleNamespace(
        draft_token=cand.flatten(), draft_token_num=d, max_tree_depth=d, tree_topk=topk,
        retrieve_index=idx, retrieve_next_token=nxt, retrieve_next_sibling=sib, grammar=None,
        draft_probs=sampling.pop("draft_probs", None))
    sampling_info = SimpleNamespace(
        is_all_greedy=greedy, acc_additive_penalties=None, acc_scaling_penalties=None,
        logit_bias=None, need_top_k_sampling=False, need_top_p_sampling=False,
        temperatures=torch.ones(bsz, 1), top_ks=torch.full((bsz,), 1 << 30, dtype=torch.int32),
        top_ps=torch.ones(bsz))
    for k, val in sampling.items():
        setattr(sampling_info, k, val)
    batch = SimpleNamespace(device="cpu", seq_lens=torch.full((bsz,), 10), sampling_info=sampling_info,
                            forward_mode=SimpleNamespace(is_idle=lambda: False))
    return verify_input, batch, SimpleNamespace(next_token_logits=logits), cand


def test_install_patches_and_restores(vb):
    eu = importlib.import_module("sglang.srt.speculative.eagle_utils")
    ewc = importlib.import_module("sglang.srt.speculative.eagle_worker_common")
    vb.install_verify_backend("sglang")
    original = eu.eagle_sample
    assert ewc.eagle_sample is original
    vb.install_verify_backend("triton")
    assert eu.eagle_sample is vb._triton_eagle_sample
    assert ewc.eagle_sample is vb._triton_eagle_sample
    assert vb.current_backend() == "triton" and "triton" in vb.describe()
    vb.install_verify_backend("triton")  # idempotent
    assert vb._original is original
    vb.install_verify_backend("sglang")
    assert eu.eagle_sample is original and ewc.eagle_sample is original
    assert vb.describe().startswith("verify backend: sglang")
    with pytest.raises(ValueError):
        vb.install_verify_backend("cuda")


def test_greedy_hook_equals_sglang_eagle_sample(vb, monkeypatch):
    eu = importlib.import_module("sglang.srt.speculative.eagle_utils")
    vb.install_verify_backend("sglang")
    original = eu.eagle_sample
    # let SGLang's own greedy path run on CPU: its Triton verify kernel, interpreted
    monkeypatch.setattr(eu, "verify_tree_greedy_kernel_triton",
                        interpreted(eu.verify_tree_greedy_kernel_triton))
    monkeypatch.setattr(eu, "verify_tree_greedy_func",
                        lambda predicts, accept_index, accept_token_num, candidates, retrieve_index,
                        retrieve_next_token, retrieve_next_sibling, target_predict, topk=-1: (
                            eu.verify_tree_greedy_triton(predicts, accept_index, accept_token_num,
                                                         candidates, retrieve_index,
                                                         retrieve_next_token, retrieve_next_sibling,
                                                         target_predict),
                            (predicts, accept_index, accept_token_num))[1])
    vb.install_verify_backend("triton")
    vb._allow_cpu = True
    for bsz, d in ((5, 4), (3, 8), (4, 1)):
        vi, batch, lo, _ = _inputs(bsz, d, 150, seed=bsz)
        vi2, batch2, lo2, _ = _inputs(bsz, d, 150, seed=bsz)
        ours = vb._triton_eagle_sample(vi, batch, lo)
        theirs = original(vi2, batch2, lo2)
        for a, b in zip(ours, theirs):
            assert a.dtype == b.dtype and torch.equal(a, b), (a, b)
    assert vb._counts["triton_greedy"] >= 3


def test_trees_and_non_cuda_fall_through(vb, monkeypatch):
    calls = []
    vb.install_verify_backend("triton")
    monkeypatch.setattr(vb, "_original", lambda *a, **k: calls.append(a) or "sglang")
    vi, batch, lo, _ = _inputs(2, 4, 64, topk=2)
    vb._allow_cpu = True
    assert vb._triton_eagle_sample(vi, batch, lo) == "sglang"  # tree
    vi, batch, lo, _ = _inputs(2, 4, 64)
    vb._allow_cpu = False
    assert vb._triton_eagle_sample(vi, batch, lo) == "sglang"  # CPU tensors
    assert len(calls) == 2


def test_triton_greedy_leaves_sampling_batches_to_sglang(vb, monkeypatch):
    calls = []
    vb.install_verify_backend("triton-greedy")
    assert "sampling: SGLang's" in vb.describe()
    monkeypatch.setattr(vb, "_original", lambda *a, **k: calls.append(a) or "sglang")
    vb._allow_cpu = True
    vi, batch, lo, _ = _inputs(3, 4, 64, greedy=False, temperatures=torch.full((3, 1), 0.7))
    assert vb._triton_eagle_sample(vi, batch, lo) == "sglang"
    before = vb._counts["triton_greedy"]
    vi, batch, lo, _ = _inputs(3, 4, 64)
    assert vb._triton_eagle_sample(vi, batch, lo) != "sglang"  # greedy: our kernel
    assert len(calls) == 1 and vb._counts["triton_greedy"] == before + 1


@pytest.mark.parametrize("rejection", [False, True])
def test_sampling_hook_matches_reference(vb, ref, monkeypatch, rejection):
    rc = importlib.import_module("sglang.srt.runtime_context")
    server_args = SimpleNamespace(speculative_use_rejection_sampling=rejection,
                                  speculative_accept_threshold_single=1.0,
                                  speculative_accept_threshold_acc=1.0)
    monkeypatch.setattr(rc, "get_server_args", lambda: server_args)
    vb.install_verify_backend("triton")
    vb._allow_cpu = True
    # top-p's exact threshold: its tokens are a function of the coins, as SGLang's are
    monkeypatch.setattr(importlib.import_module("adaptive_spec.kernels.chain_verify"),
                        "DEFAULT_TOP_P_METHOD",
                        "exact")
    bsz, d, v = 6, 4, 90
    temps = torch.rand(bsz, 1) + 0.5
    top_ps = torch.rand(bsz) * 0.5 + 0.5
    q = torch.softmax(torch.randn(bsz, d - 1, v), -1) if rejection else None
    vi, batch, lo, cand = _inputs(bsz, d, v, greedy=False, seed=3, temperatures=temps,
                                  top_ps=top_ps, need_top_p_sampling=True, draft_probs=q)
    logits = lo.next_token_logits.clone()
    torch.manual_seed(123)
    predict, accept_lens, accept_index = vb._triton_eagle_sample(vi, batch, lo)
    torch.manual_seed(123)  # the same coins, drawn the way SGLang's eagle_sample draws them
    coins = torch.rand_like(cand, dtype=torch.float32)
    coins_final = torch.rand((bsz,), dtype=torch.float32)
    p = ref.renorm_probs_ref(logits, temps, None, top_ps, rows_per_request=d)
    exp = ref.chain_verify_sampling_ref(p, cand, coins, coins_final, draft_probs=q)
    assert torch.equal(predict, exp[0]) and torch.equal(accept_index, exp[1])
    assert torch.equal(accept_lens, exp[2] + 1)
