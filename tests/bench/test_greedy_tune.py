"""greedy_tune's sweep: the default launch first, then tiles of 1-8 vectors per thread."""
from adaptive_spec.bench import greedy_tune as gt


def test_the_default_launch_comes_first_and_every_tile_holds_one_to_eight_vectors_per_thread():
    cfgs = list(gt.configs())
    assert cfgs[:2] == [(None, None, None), (None, None, 8.0)]  # the default, the old default
    for blk, nw, _ in cfgs[2:]:
        vectors = blk // (nw * 32 * 8)  # bf16: 8 elements per 16-byte vector
        assert vectors in (1, 2, 4, 8), (blk, nw)
    assert len(set(cfgs)) == len(cfgs) == 2 + len(gt.TILES) * len(gt.PROGRAMS_PER_SM)


def test_without_a_gpu_it_says_so_in_one_line_and_exits_2(capsys, tmp_path):
    import torch

    if torch.cuda.is_available():
        return
    assert gt.main(["--out", str(tmp_path / "t.json")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_the_finalists_run_over_the_whole_kernel_grid_after_the_default():
    cfgs = list(gt.configs(finalists=True))
    assert cfgs[:2] == [(None, None, None), (None, None, 8.0)] and cfgs[2:] == list(gt.FINALISTS)
    assert len(gt.GRID) == 36 and (64, 3, 128256) in gt.GRID


def test_a_bad_acceptance_is_one_line_and_exit_2(capsys, tmp_path):
    assert gt.main(["--out", str(tmp_path / "t.json"), "--accept", "0.7,2"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
