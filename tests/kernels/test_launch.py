"""kernels/launch.py's direct launch, against a fake JIT function (no GPU here): which calls go
through the JIT (compile and cache lookup) and which straight to the compiled launcher, with
what arguments."""

from types import SimpleNamespace

import pytest
import torch

from adaptive_spec.kernels import launch


class FakeCompiled:
    """Stands in for Triton's CompiledKernel: records its launcher calls."""

    function, packed_metadata = 7, ("packed",)

    def __init__(self, fail=False):
        self.runs, self.fail = [], fail

    def run(self, *args):
        if self.fail:
            raise TypeError("launcher signature differs")
        self.runs.append(args)


class FakeJit:
    """Stands in for a @triton.jit function with positional args (first, x, n), constexpr BLOCK."""

    arg_names = ["first", "x", "n", "BLOCK"]

    def __init__(self, fail=False):
        self.jit_calls, self.compiled, self.fail = [], [], fail

    def __getitem__(self, grid):
        def call(*args, **meta):
            self.jit_calls.append((grid, args, meta))
            self.compiled.append(FakeCompiled(self.fail))
            return self.compiled[-1]
        return call


class FakeCudaTensor:
    device = SimpleNamespace(type="cuda", index=0)


CUDA_ARG = FakeCudaTensor()


@pytest.fixture
def direct(monkeypatch):
    monkeypatch.setattr(launch, "_raw_stream", lambda index: 1234)
    monkeypatch.setattr(launch, "_launch_hooks_set", lambda: False)
    monkeypatch.setenv("ADAPTIVE_SPEC_TRITON_LAUNCH", "direct")


def test_second_call_of_a_signature_skips_the_jit(direct):
    fn, x = FakeJit(), torch.zeros(64, dtype=torch.float32)
    launcher = launch.DirectLauncher(fn)
    launcher((8,), (CUDA_ARG, x, 48), dict(BLOCK=128, num_warps=4))
    launcher((16, 2), (CUDA_ARG, x, 96), dict(BLOCK=128, num_warps=4))
    assert len(fn.jit_calls) == 1
    # grid, stream, handles, no launch metadata or hooks, then args and the constexpr values
    assert fn.compiled[0].runs == [(16, 2, 1, 1234, 7, ("packed",), None, None, None,
                                    CUDA_ARG, x, 96, 128)]


@pytest.mark.parametrize("change", ["misaligned tensor", "dtype", "int == 1", "int % 16",
                                    "64-bit int", "constexpr"])
def test_a_different_specialisation_goes_through_the_jit(direct, change):
    fn = FakeJit()
    launcher = launch.DirectLauncher(fn)
    buf = torch.zeros(64, dtype=torch.int8)
    x, n, meta = buf[:32], 48, dict(BLOCK=128, num_warps=4)
    launcher((8,), (CUDA_ARG, x, n), meta)
    if change == "misaligned tensor":
        x = buf[1:33]
    elif change == "dtype":
        x = torch.zeros(32, dtype=torch.int16)
    elif change == "int == 1":
        n = 1
    elif change == "int % 16":
        n = 47
    elif change == "64-bit int":
        n = 2 ** 31 + 16
    else:
        meta = dict(BLOCK=256, num_warps=4)
    launcher((8,), (CUDA_ARG, x, n), meta)
    assert len(fn.jit_calls) == 2 and fn.compiled[0].runs == []


@pytest.mark.parametrize("mode", ["jit", "direct", None, "bogus"])
def test_direct_is_the_default_jit_mode_and_cpu_tensors_use_the_jit(direct, monkeypatch, mode):
    fn, x = FakeJit(), torch.zeros(8)
    launcher = launch.DirectLauncher(fn)
    for _ in range(2):
        launcher((1,), (x, x, 16), dict(BLOCK=8))  # a CPU tensor first: the interpreter's case
    if mode is None:
        monkeypatch.delenv("ADAPTIVE_SPEC_TRITON_LAUNCH")
    else:
        monkeypatch.setenv("ADAPTIVE_SPEC_TRITON_LAUNCH", mode)
    for _ in range(2):
        launcher((1,), (CUDA_ARG, x, 16), dict(BLOCK=8))
    # the CPU calls and, through the JIT, both CUDA calls; launched directly, only the first
    assert len(fn.jit_calls) == (4 if mode == "jit" else 3)


def test_a_failing_launcher_falls_back_to_the_jit_for_good(direct, caplog):
    fn, x = FakeJit(fail=True), torch.zeros(8)
    launcher = launch.DirectLauncher(fn)
    for _ in range(3):
        launcher((1,), (CUDA_ARG, x, 16), dict(BLOCK=8))
    assert len(fn.jit_calls) == 3 and launcher.disabled
    assert "using the JIT launch from now on" in caplog.text


PLAN = object()  # a wrapper's launch plan: the key `planned` caches the compiled kernel under


def test_a_planned_launch_after_the_first_goes_to_the_launcher_with_the_plans_grid(direct):
    fn, x = FakeJit(), torch.zeros(64, dtype=torch.float32)
    launcher = launch.DirectLauncher(fn)
    meta = dict(BLOCK=128, num_warps=4)
    launcher.planned(PLAN, 0, True, (8, 2), (CUDA_ARG, x, 48), meta)
    launcher.planned(PLAN, 0, True, (8, 2), (CUDA_ARG, x, 96), meta)
    assert len(fn.jit_calls) == 1
    assert fn.compiled[0].runs == [(8, 2, 1, 1234, 7, ("packed",), None, None, None,
                                    CUDA_ARG, x, 96, 128)]
    # another plan (another shape): compiled through the JIT again
    launcher.planned(object(), 0, True, (8,), (CUDA_ARG, x, 96), meta)
    assert len(fn.jit_calls) == 2


@pytest.mark.parametrize("case", ["unaligned", "cpu", "jit mode", "hooks"])
def test_a_planned_launch_uses_the_jit_where_the_plan_cannot_vouch_for_it(direct, monkeypatch,
                                                                           case):
    fn, x = FakeJit(), torch.zeros(64, dtype=torch.float32)
    launcher = launch.DirectLauncher(fn)
    meta = dict(BLOCK=128, num_warps=4)
    launcher.planned(PLAN, 0, True, (8,), (CUDA_ARG, x, 48), meta)  # cached for the aligned case
    aligned, index = case != "unaligned", -1 if case == "cpu" else 0
    if case == "jit mode":
        monkeypatch.setenv("ADAPTIVE_SPEC_TRITON_LAUNCH", "jit")
    if case == "hooks":
        monkeypatch.setattr(launch, "_launch_hooks_set", lambda: True)
    launcher.planned(PLAN, index, aligned, (8,), (CUDA_ARG, x, 48), meta)
    # the planned entry was not used (unaligned: `__call__`, whose per-argument key has its own
    # cache, compiles on its first call too)
    assert fn.compiled[0].runs == [] and len(fn.jit_calls) == 2


def test_a_failing_planned_launch_falls_back_to_the_jit_for_good(direct, caplog):
    fn, x = FakeJit(fail=True), torch.zeros(8)
    launcher = launch.DirectLauncher(fn)
    for _ in range(3):
        launcher.planned(PLAN, 0, True, (1,), (CUDA_ARG, x, 16), dict(BLOCK=8))
    assert len(fn.jit_calls) == 3 and launcher.disabled
    assert "using the JIT launch from now on" in caplog.text


def test_triton_36s_empty_hook_chains_are_no_hooks(monkeypatch):
    """Triton 3.6 keeps its launch hooks as HookChain objects (never None); an empty chain must
    not send every launch through the JIT."""
    chain = lambda calls: SimpleNamespace(calls=calls)  # noqa: E731
    for enter, exit_, hooked in ((chain([]), chain([]), False), (chain([print]), chain([]), True),
                                 (None, None, False), (print, None, True)):
        monkeypatch.setattr(launch, "_runtime_knobs",
                            SimpleNamespace(launch_enter_hook=enter, launch_exit_hook=exit_))
        assert launch._launch_hooks_set() is hooked


class CudaLauncher:
    """Stands in for Triton 3.6's CUDA launcher (matched by class name): a Python `__call__`
    over a C `launch` that takes the cooperative-grid and PDL flags and two scratch buffers."""

    launch_cooperative_grid, launch_pdl = False, True

    def __init__(self, scratch):
        self.global_scratch_size, self.profile_scratch_size = scratch, 0
        self.wrapper_calls, self.c_calls = [], []

    def __call__(self, *args):
        self.wrapper_calls.append(args)

    def launch(self, *args):
        self.c_calls.append(args)


@pytest.mark.parametrize("scratch", [0, 64])
def test_the_cuda_launchers_c_function_is_called_when_no_scratch_is_needed(direct, scratch):
    launcher_obj = CudaLauncher(scratch)
    compiled = SimpleNamespace(run=launcher_obj, function=7, packed_metadata=("packed",))

    class Jit(FakeJit):
        def __getitem__(self, grid):
            return lambda *args, **meta: compiled

    launcher, x = launch.DirectLauncher(Jit()), torch.zeros(8)
    for _ in range(2):
        launcher.planned(PLAN, 0, True, (4,), (CUDA_ARG, x, 16), dict(BLOCK=8))
    if scratch:  # scratch to allocate: through the launcher object, as Triton's runner does
        assert launcher_obj.c_calls == [] and launcher_obj.wrapper_calls == [
            (4, 1, 1, 1234, 7, ("packed",), None, None, None, CUDA_ARG, x, 16, 8)]
    else:  # the flags, no scratch, the metadata, no launch metadata or hooks, the arguments
        assert launcher_obj.wrapper_calls == [] and launcher_obj.c_calls == [
            (4, 1, 1, 1234, 7, False, True, None, None, ("packed",), None, None, None,
             CUDA_ARG, x, 16, 8)]
