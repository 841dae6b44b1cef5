"""Greedy chain verify: bit-exact against torch.argmax + the reference walk and against
SGLang 0.5.16's own Triton ``verify_tree_greedy`` kernel (CPU, TRITON_INTERPRET=1)."""
import pytest
import torch

from .helpers import ragged_greedy_case, sglang_verify_greedy

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _assert_same(out, expected, what=""):
    names = ("predicts", "accept_index", "accept_token_num")
    for name, a, b in zip(names, out, expected):
        assert a.dtype == torch.int32, name
        assert torch.equal(a.cpu().reshape(b.shape), b.cpu()), f"{what}{name}: {a.tolist()} != {b.tolist()}"


@pytest.mark.parametrize("bsz", [1, 3, 64])
@pytest.mark.parametrize("k", [1, 3, 7])
def test_greedy_bit_exact_vs_reference_and_sglang(cv, ref, bsz, k):
    d = k + 1
    logits, cand, n_acc = ragged_greedy_case(bsz, d, 97, gen=torch.Generator().manual_seed(bsz * 10 + k))
    expected = ref.chain_verify_greedy_ref(logits, cand)
    assert torch.equal(expected[2], n_acc.to(torch.int32)), "test case construction"
    sgl = sglang_verify_greedy(logits, cand)
    _assert_same(sgl, expected, "sglang vs reference: ")
    # default launch (one slice per row here) and a sliced vocab (several programs per row)
    if bsz < 64:  # (the interpreter is slow: the big batch runs the tiled launch only)
        _assert_same(cv.chain_verify_greedy(logits, cand), expected)
        _assert_same(cv.chain_verify_greedy(logits, cand, block_size=16, num_slices=4), expected)
    # [4, 8] tiles: 4 vectors per lane, reduced inside the lane, double-buffered; both schedules
    # (rows: every row at once, later rows skip after a flagged mismatch; chain: rows in order)
    for schedule in ("rows", "chain"):
        _assert_same(cv.chain_verify_greedy(logits, cand, block_size=32, lanes=8, num_slices=2,
                                            schedule=schedule), expected, f"{schedule}: ")


def test_greedy_all_accepted_and_all_rejected(cv, ref):
    bsz, d, v = 5, 4, 64
    logits = torch.randn(bsz * d, v)
    target = logits.argmax(-1).reshape(bsz, d)
    cand = torch.zeros(bsz, d, dtype=torch.int64)
    cand[:, 1:] = target[:, :-1]
    out = cv.chain_verify_greedy(logits, cand, block_size=16, num_slices=3)
    assert out[2].tolist() == [d - 1] * bsz
    assert out[0].reshape(bsz, d).tolist() == target.tolist()
    _assert_same(out, ref.chain_verify_greedy_ref(logits, cand))
    cand[:, 1:] = (target[:, :-1] + 1) % v
    out = cv.chain_verify_greedy(logits, cand, block_size=16, num_slices=3)
    assert out[2].tolist() == [0] * bsz
    assert out[1][:, 1:].eq(-1).all() and out[1][:, 0].tolist() == [b * d for b in range(bsz)]
    _assert_same(out, ref.chain_verify_greedy_ref(logits, cand))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_greedy_dtypes_ties_across_slices(cv, ref, dtype):
    """The max appears in several slices: the first index must win, like torch.argmax."""
    bsz, d, v = 4, 3, 200
    logits = torch.randn(bsz * d, v).to(dtype)
    for r in range(bsz * d):
        big = torch.tensor(9.0).to(dtype)
        for i in (150, 40 + r, 170):
            logits[r, i] = big
    cand = torch.zeros(bsz, d, dtype=torch.int64)
    cand[:, 1] = torch.tensor([40, 41, 150, 170])  # only request 0's draft is the first max
    cand[:, 2] = torch.tensor([44, 0, 0, 0])
    expected = ref.chain_verify_greedy_ref(logits, cand)
    assert expected[2].tolist() == [1, 0, 0, 0]
    for ns in (1, 3, 7):
        _assert_same(cv.chain_verify_greedy(logits, cand, block_size=32, num_slices=ns), expected,
                     f"ns={ns}: ")
        _assert_same(cv.chain_verify_greedy(logits, cand, block_size=32, lanes=8, num_slices=ns),
                     expected, f"ns={ns}, 4x8 tiles: ")
    _assert_same(sglang_verify_greedy(logits, cand), expected)


def test_greedy_special_values(cv, ref):
    """NaN is the maximum (first NaN wins), -0.0 ties with +0.0, an all -inf row gives 0,
    drafts outside the vocabulary never match, int32 candidates work."""
    d, v = 3, 50
    rows = torch.full((4 * d, v), -5.0)
    rows[0, 30] = float("nan"); rows[0, 40] = float("nan"); rows[0, 10] = float("inf")
    rows[1, 3] = 2.0
    rows[3, 7] = -0.0; rows[3, 3] = 0.0; rows[3, 9] = 0.0
    rows[6, :] = float("-inf")
    rows[7, 1] = 3.0
    rows[9, 20] = 1.0
    cand = torch.tensor([[0, 30, 3], [0, 7, 0], [0, 0, v + 5], [0, 20, 5]], dtype=torch.int32)
    # torch's own answers for these rows pin the semantics we claim
    assert int(torch.argmax(rows[0])) == 30 and int(torch.argmax(rows[3])) == 3
    assert int(torch.argmax(rows[6])) == 0
    expected = ref.chain_verify_greedy_ref(rows, cand.to(torch.int64))
    assert expected[2].tolist() == [2, 0, 1, 1]
    assert expected[0].tolist() == [30, 3, 0, 3, 0, 0, 0, 1, 0, 20, 0, 0]
    for ns in (1, 2):
        _assert_same(cv.chain_verify_greedy(rows, cand, block_size=16, num_slices=ns), expected)
        _assert_same(cv.chain_verify_greedy(rows, cand, block_size=16, lanes=4, num_slices=ns),
                     expected)


def test_greedy_inplace_contract_and_state_reuse(cv, ref):
    """Outputs passed in are fully overwritten (no pre-fill needed), accept_lens = n + 1, and
    the self-resetting counters allow back-to-back calls with other batch sizes and D = 1."""
    gen = torch.Generator().manual_seed(7)
    for bsz, d, ns in ((6, 4, 3), (2, 8, 2), (9, 1, 4), (6, 4, 1), (140, 2, 1)):
        logits, cand, _ = ragged_greedy_case(bsz, d, 64, dtype=torch.float32, gen=gen)
        predicts = torch.full((bsz * d,), 77, dtype=torch.int32)
        accept_index = torch.full((bsz, d), 55, dtype=torch.int32)
        accept_num = torch.full((bsz,), 33, dtype=torch.int32)
        lens = torch.full((bsz,), 11, dtype=torch.int32)
        out = cv.chain_verify_greedy(logits, cand, predicts, accept_index, accept_num, lens,
                                     block_size=16, num_slices=ns)
        assert out[0] is predicts and out[1] is accept_index and out[2] is accept_num
        expected = ref.chain_verify_greedy_ref(logits, cand)
        _assert_same(out, expected, f"bsz={bsz} d={d}: ")
        assert torch.equal(lens, accept_num + 1)


def test_greedy_rows_after_mismatch_are_not_needed(cv, ref):
    """Rows after the first mismatch may hold anything (here NaN, which would be argmax)."""
    bsz, d, v = 4, 5, 80
    logits = torch.randn(bsz * d, v)
    target = logits.argmax(-1).reshape(bsz, d)
    cand = torch.zeros(bsz, d, dtype=torch.int64)
    cand[:, 1:] = target[:, :-1]
    stops = [0, 1, 3, 4]
    for b, s in enumerate(stops):
        if s < d - 1:
            cand[b, s + 1] = (target[b, s] + 1) % v
    expected = ref.chain_verify_greedy_ref(logits, cand)
    assert expected[2].tolist() == stops
    for b, s in enumerate(stops):
        logits[b * d + s + 1:(b + 1) * d] = float("nan")
    _assert_same(cv.chain_verify_greedy(logits, cand, block_size=16, num_slices=3), expected)


def test_greedy_input_validation(cv):
    with pytest.raises(ValueError):
        cv.chain_verify_greedy(torch.randn(7, 10), torch.zeros(2, 4, dtype=torch.int64))
    with pytest.raises(ValueError):
        cv.chain_verify_greedy(torch.randn(8, 10).to(torch.int32), torch.zeros(2, 4, dtype=torch.int64))
    with pytest.raises(ValueError):
        cv.chain_verify_greedy(torch.randn(8, 10), torch.zeros(2, 4, dtype=torch.int64),
                               predicts=torch.zeros(8, dtype=torch.int64))


def test_many_rows_get_more_programs_than_one_wave_with_slices_of_at_least_8192(cv):
    def plan(bsz, d, v, programs_per_sm=None):
        # bf16, the H200's 132 SMs, default tile (2,048 elements) and warps
        return cv._greedy_plan(bsz, d, v, 2, 132, None, None, 4, None, programs_per_sm, "rows")[:2]

    assert plan(64, 4, 128256) == (8192, 16)  # 256 rows: 32 programs per SM
    assert plan(64, 4, 32000) == (8192, 4)  # ... but no slice under 8,192 elements
    assert plan(256, 8, 163840) == (55296, 3)
    assert plan(16, 4, 128256) == (8192, 16)  # fewer rows: 8 programs per SM, as before
    assert plan(64, 2, 128256) == (14336, 9)
    assert plan(64, 4, 128256, programs_per_sm=8.0) == (26624, 5)  # an explicit count decides


def test_a_shapes_launch_plan_is_made_once_and_bad_input_is_refused_every_time(cv, ref):
    """The per-call path reads a plan made on a shape's first call (checks, launch sizes, work
    buffers); another shape, stride or knob gets its own, and a call that fails the checks
    leaves no plan behind, so it fails again."""
    gen = torch.Generator().manual_seed(3)
    logits, cand, _ = ragged_greedy_case(3, 4, 64, dtype=torch.float32, gen=gen)
    cv._greedy_plans.clear()
    for _ in range(2):
        _assert_same(cv.chain_verify_greedy(logits, cand, block_size=16), ref.chain_verify_greedy_ref(logits, cand))
    assert len(cv._greedy_plans) == 1
    wide = torch.zeros(3, 8, dtype=cand.dtype)
    wide[:, ::2] = cand  # the same drafts, a column stride of 2
    _assert_same(cv.chain_verify_greedy(logits, wide[:, ::2], block_size=16),
                 ref.chain_verify_greedy_ref(logits, cand))
    cv.chain_verify_greedy(logits, cand, block_size=16, num_slices=2)
    assert len(cv._greedy_plans) == 3
    for _ in range(2):
        with pytest.raises(ValueError):
            cv.chain_verify_greedy(logits[:-1], cand)
        with pytest.raises(ValueError):
            cv.chain_verify_greedy(logits, cand, schedule="tree")
        with pytest.raises(ValueError):
            cv.chain_verify_greedy(logits, cand, predicts=torch.zeros(12, dtype=torch.int64),
                                   block_size=16)  # a planned shape: outputs are checked per call
    assert len(cv._greedy_plans) == 3


def test_alignment_is_read_from_every_tensor_given(cv):
    buf = torch.zeros(64, dtype=torch.int8)
    assert cv._aligned16(buf[:16], None, buf[32:48])
    assert not cv._aligned16(buf[:16], buf[1:17])  # one tensor 1 byte off: the JIT decides
