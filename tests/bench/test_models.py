"""CPU tests of the synthetic model builder (adaptive_spec.bench.models), tiny shapes.

- the written checkpoints load with SGLang 0.5.16's own model classes' weight loaders
  (``LlamaForCausalLM`` / ``LlamaForCausalLMEagle3`` built on CPU in a subprocess with a
  single-process gloo group), every parameter filled with the expected values;
- the pure-torch reference forward (SGLang's llama / llama_eagle3 math, bf16) shows the
  target's greedy next token is pi(t) and every draft proposes pi'(y);
- simulated EAGLE chains (steps 3): greedy dial and sampling dial within +-0.05 of the
  requested per-position acceptance, aligned 1.0, random ~0, the mix arcs, repeat mode;
- formulas, determinism, CLI errors.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from adaptive_spec.bench import models as M

DRAFTS = "aligned,random,dial:0.5,dial:0.7,dial:0.9,mix:0/0.5/1"
TOL = 0.05


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """Tiny ops: extra threads only add contention on a shared 2-core machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("synthetic-models"))
    assert M.main(["--out", out, "--tiny", "--drafts", DRAFTS, "--device", "cpu"]) == 0
    return out


@pytest.fixture(scope="module")
def plan():
    return M.make_plan(M.shape_from_preset("tiny"), 0)


@pytest.fixture(scope="module")
def target(built):
    shape = M.shape_from_preset("tiny")
    return M.RefTarget(os.path.join(built, "target"), capture=shape.capture_layers())


def _draft(built, target, name):
    return M.RefDraft(os.path.join(built, name), target)


# ---------------------------------------------------------------------------- formulas
def test_formulas_roundtrip_and_known_values():
    # acceptance-dial.md: g ~ 12.6 for alpha 0.7 at V = 128256, temperature 1
    g = M.gap_for_acceptance(0.7, 128256)
    assert abs(g - 12.6) < 0.1
    for a in (0.3, 0.5, 0.7, 0.9, 0.99):
        for spread in (0.0, 0.5):
            T = M.temperature_for_acceptance(a, 12.0, 32000, spread)
            assert T > 0
            assert abs(M.acceptance_for_temperature(T, 12.0, 32000, spread) - a) < 1e-6
    assert M.temperature_for_acceptance(1.0, 12.0, 32000) == 0.0
    assert M.acceptance_for_temperature(0.0, 12.0, 32000) == 1.0
    assert M.expected_accept_length(1.0, 3) == 4.0
    assert M.expected_accept_length(0.0, 3) == 1.0
    assert abs(M.acceptance_from_accept_length(M.expected_accept_length(0.7, 3), 3) - 0.7) < 1e-6
    # histogram MLE: a=0.5, steps 3 -> P(k) = .5, .25, .125, .125
    assert abs(M.acceptance_from_histogram([400, 200, 100, 100], 3) - 0.5) < 1e-9
    assert M.acceptance_from_histogram([0, 0, 0, 8], 3) == 1.0
    assert M.acceptance_from_histogram([31], 3) == 0.0


def test_rope_self_focus_gap():
    for hd, theta in ((128, 10000.0), (128, 500000.0), (64, 10000.0)):
        p, frac, s = M.rope_self_focus(hd, theta, 8192)
        assert 1 <= p <= hd // 2 and frac > 0.1 and abs(s * frac - M.ATTN_GAP) < 1e-9


# ---------------------------------------------------------------------------- files
def test_layout_configs_and_dial_json(built, plan):
    names = sorted(os.listdir(built))
    assert names == sorted(["target", "draft-aligned", "draft-random", "draft-dial-0.5",
                            "draft-dial-0.7", "draft-dial-0.9", "draft-mix-0_0.5_1"])
    for n in names:
        for f in ("config.json", "model.safetensors", M.DIAL_FILE):
            assert os.path.isfile(os.path.join(built, n, f)), (n, f)
    tcfg = json.load(open(os.path.join(built, "target", "config.json")))
    assert tcfg["architectures"] == ["LlamaForCausalLM"] and tcfg["num_hidden_layers"] == 4
    dcfg = json.load(open(os.path.join(built, "draft-dial-0.7", "config.json")))
    assert dcfg["architectures"] == ["LlamaForCausalLMEagle3"]
    assert dcfg["num_hidden_layers"] == 1 and dcfg["draft_vocab_size"] == 2048
    # 4 layers: SGLang's default capture [2, 2, 1] collides -> explicit distinct layer ids
    assert dcfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [0, 1, 2]
    tm = json.load(open(os.path.join(built, "target", M.DIAL_FILE)))
    assert tm["role"] == "target" and tm["mode"] == "perm-target"
    assert tm["params"]["g"] == pytest.approx(plan.gap)
    assert {r["requested"] for r in tm["sampling_dial"]["rows"]} >= {0.5, 0.7, 0.9}
    for r in tm["sampling_dial"]["rows"]:  # the built logits agree with the formula
        assert abs(r["empirical_alpha"] - r["requested"]) < 0.02, r
    pair = tm["pair_id"]
    for n, mode, req in (("draft-aligned", "aligned", 1.0), ("draft-random", "random", 0.0),
                         ("draft-dial-0.7", "greedy-dial", 0.7)):
        m = json.load(open(os.path.join(built, n, M.DIAL_FILE)))
        assert m["mode"] == mode and m["requested"] == req and m["pair_id"] == pair
        if mode != "random":
            assert abs(m["expected"]["greedy_per_position"] - req) < 1e-3
            assert m["params"]["a"] == req and m["params"]["g"] == pytest.approx(plan.gap)
    mix = json.load(open(os.path.join(built, "draft-mix-0_0.5_1", M.DIAL_FILE)))
    assert mix["mode"] == "per-request-mix"
    assert [a["acceptance"] for a in mix["arcs"]] == [0, 0.5, 1]


def test_deterministic_given_seed(tmp_path):
    def tensors(seed, sub):
        out = str(tmp_path / sub)
        assert M.main(["--out", out, "--tiny", "--drafts", "dial:0.5", "--device", "cpu",
                       "--seed", str(seed)]) == 0
        return {n: M.load_safetensors(os.path.join(out, n)) for n in ("target", "draft-dial-0.5")}

    a, b, c = tensors(3, "a"), tensors(3, "b"), tensors(4, "c")
    for n in a:
        assert a[n].keys() == b[n].keys()
        assert all(torch.equal(a[n][k], b[n][k]) for k in a[n])
    assert not torch.equal(a["target"]["lm_head.weight"], c["target"]["lm_head.weight"])
    # a draft written later, alone or after others, is the same file (pairs with the target)
    out = str(tmp_path / "d")
    assert M.main(["--out", out, "--tiny", "--drafts", "random,dial:0.5", "--no-target",
                   "--device", "cpu", "--seed", "3"]) == 0
    d = M.load_safetensors(os.path.join(out, "draft-dial-0.5"))
    assert all(torch.equal(d[k], a["draft-dial-0.5"][k]) for k in d)
    ids = {json.load(open(os.path.join(p, M.DIAL_FILE)))["pair_id"] for p in (
        os.path.join(out, "draft-dial-0.5"), str(tmp_path / "a" / "target"))}
    assert len(ids) == 1


# ---------------------------------------------------------------------------- behaviour
def test_target_greedy_follows_the_cycle(target, plan):
    ys = plan.order
    logits, aux, _ = target.forward(ys, torch.zeros_like(ys), M.KV(target.L), self_only=True)
    assert torch.equal(torch.argmax(logits, dim=-1), plan.next_tok[ys])
    # the cycle is one long cycle over the draft's hot vocabulary, no special token in it
    seen, t = set(), int(plan.order[0])
    for _ in range(plan.n):
        seen.add(t)
        t = int(plan.next_tok[t])
    assert len(seen) == plan.n and t == int(plan.order[0])
    assert not (seen & set(M.SPECIAL_TOKENS)) and seen <= set(plan.hot.tolist())
    # special / non-hot tokens are never the argmax, whatever the input
    others = torch.tensor([t for t in range(4096) if t not in seen][:256])
    lo, _, _ = target.forward(others, torch.zeros_like(others), M.KV(target.L), self_only=True)
    assert set(torch.argmax(lo, dim=-1).tolist()) <= seen


@pytest.mark.parametrize("name", ["draft-aligned", "draft-dial-0.5", "draft-dial-0.9",
                                  "draft-mix-0_0.5_1"])
def test_every_draft_proposal_is_pi_prime(built, target, plan, name):
    spec = M.parse_drafts(name[len("draft-"):].replace("-", ":", 1).replace("_", "/"))[0]
    pi_d, accept, _ = M.draft_mapping(plan, spec)
    D = _draft(built, target, name)
    ys = plan.order
    prev = ys[torch.randperm(plan.n, generator=torch.Generator().manual_seed(1))]
    want = pi_d[ys]
    assert torch.equal(M.draft_proposals(D, ys), want)  # draft-extend context
    assert torch.equal(M.draft_proposals(D, ys, prev), want)  # draft-decode context
    # accepted (greedy) exactly on the accept set
    assert torch.equal(want == plan.next_tok[ys], accept[ys])


def test_attention_is_self_focused_in_bf16(built, target):
    D = _draft(built, target, "draft-dial-0.7")
    assert M.attention_gap(D, [1, 2, 100, 4095, 8191]) > 30.0


@pytest.mark.parametrize("a", [0.5, 0.7, 0.9])
def test_greedy_dial_simulated(built, target, a):
    r = M.simulate("", "", requests=8, new_tokens=128, steps=3, seed=11,
                   draft=_draft(built, target, f"draft-dial-{a}"))
    assert sum(r["attempts"]) > 700
    assert abs(r["acceptance"] - a) <= TOL, r["acceptance"]
    assert abs(r["mean_accept_len"] - M.expected_accept_length(a, 3)) < 0.35


@pytest.mark.parametrize("a", [0.5, 0.7, 0.9])
def test_sampling_dial_simulated(built, target, a):
    tm = json.load(open(os.path.join(built, "target", M.DIAL_FILE)))
    row = [r for r in tm["sampling_dial"]["rows"] if r["requested"] == a][0]
    T = M.temperature_for_acceptance(a, tm["params"]["g"], tm["params"]["competitors"] + 1,
                                     tm["params"]["spread"])
    assert T == pytest.approx(row["temperature"], rel=1e-4)
    r = M.simulate("", "", requests=8, new_tokens=128, steps=3, seed=12, temperature=T,
                   draft=_draft(built, target, "draft-aligned"))
    assert sum(r["attempts"]) > 700
    assert abs(r["acceptance"] - a) <= TOL, r["acceptance"]


def test_aligned_and_random_bounds(built, target):
    r = M.simulate("", "", requests=4, new_tokens=64, seed=13,
                   draft=_draft(built, target, "draft-aligned"))
    assert r["acceptance"] == 1.0 and r["histogram"][:3] == [0, 0, 0]
    assert r["mean_accept_len"] == 4.0
    r = M.simulate("", "", requests=4, new_tokens=64, seed=13,
                   draft=_draft(built, target, "draft-random"))
    assert r["acceptance"] <= 0.02 and r["mean_accept_len"] < 1.05
    # sampling with the random draft: still ~0
    r = M.simulate("", "", requests=2, new_tokens=48, seed=13, temperature=1.0,
                   draft=_draft(built, target, "draft-random"))
    assert r["acceptance"] <= 0.02


def test_greedy_outputs_identical_with_any_draft(built, target, plan):
    """Losslessness of the simulation itself: the output is pi^k(last prompt token)."""
    prompts = [[5, 9, int(plan.order[7])], [int(plan.order[100])]]
    for name in ("draft-aligned", "draft-random", "draft-dial-0.5"):
        r = M.simulate("", "", requests=2, new_tokens=20, prompts=prompts,
                       draft=_draft(built, target, name))
        for p, out in zip(prompts, r["outputs"]):
            t, want = p[-1], []
            for _ in range(20):
                t = int(plan.next_tok[t])
                want.append(t)
            assert out == want, name


def test_mix_arcs_set_per_request_acceptance(built, target):
    d = os.path.join(built, "draft-mix-0_0.5_1")
    D = _draft(built, target, "draft-mix-0_0.5_1")
    got = {}
    for a in (0.0, 0.5, 1.0):
        toks = M.mix_prompt_tokens(d, a, k=4)
        r = M.simulate("", "", requests=4, new_tokens=96, seed=14,
                       prompts=[[3, t] for t in toks], draft=D)
        got[a] = r["acceptance"]
    assert got[0.0] <= 0.02 and got[1.0] == 1.0 and abs(got[0.5] - 0.5) <= 0.1, got


def test_repeat_target_gives_all_or_nothing_requests(tmp_path):
    out = str(tmp_path / "rep")
    assert M.main(["--out", out, "--tiny", "--target-mode", "repeat", "--drafts",
                   "dial:0.5", "--device", "cpu"]) == 0
    meta = json.load(open(os.path.join(out, "draft-dial-0.5", M.DIAL_FILE)))
    shape = M.shape_from_preset("tiny")
    T = M.RefTarget(os.path.join(out, "target"), capture=shape.capture_layers())
    D = M.RefDraft(os.path.join(out, "draft-dial-0.5"), T)
    full = M.simulate("", "", requests=2, new_tokens=24, draft=D,
                      prompts=[[4, t] for t in meta["last_tokens_full"][:2]])
    zero = M.simulate("", "", requests=2, new_tokens=24, draft=D,
                      prompts=[[4, t] for t in meta["last_tokens_zero"][:2]])
    assert full["acceptance"] == 1.0 and zero["acceptance"] == 0.0
    assert all(len(set(o)) == 1 for o in full["outputs"] + zero["outputs"])  # repeats


def test_fp32_reference_agrees(built):
    """The dial does not depend on bf16 rounding (same run in float32)."""
    shape = M.shape_from_preset("tiny")
    T = M.RefTarget(os.path.join(built, "target"), dtype=torch.float32,
                    capture=shape.capture_layers())
    D = M.RefDraft(os.path.join(built, "draft-dial-0.7"), T, dtype=torch.float32)
    r = M.simulate("", "", requests=4, new_tokens=96, seed=15, draft=D)
    assert abs(r["acceptance"] - 0.7) <= 0.08


def test_check_dims_tiny():
    r = M.check_dims(M.shape_from_preset("tiny"), M.parse_drafts("dial:0.7"), samples=512,
                     sim_requests=1, sim_tokens=24, device="cpu", log=lambda s: None)
    assert r["target_argmax_ok"] == 1.0 and r["target_min_margin"] > 0.3 * r["g"]
    d = r["drafts"]["draft-dial-0.7"]
    assert d["extend_ok"] == 1.0 and d["decode_ok"] == 1.0 and d["attention_min_gap"] > 30


# ---------------------------------------------------------------------------- CLI
@pytest.mark.parametrize("argv", [
    ["--tiny"],  # no --out
    ["--out", "X", "--preset", "70b"],
    ["--out", "X", "--drafts", "dial:1.5"],
    ["--out", "X", "--drafts", "dial:x"],
    ["--out", "X", "--drafts", "sometimes"],
    ["--out", "X", "--drafts", "mix:0.5"],
    ["--out", "X", "--drafts", "aligned,aligned"],
    ["--out", "X", "--tiny", "--heads", "3"],
    ["--out", "X", "--tiny", "--layers", "2"],
    ["--out", "X", "--tiny", "--draft-vocab", "99999"],
    ["--out", "X", "--target-mode", "shuffle"],
    ["--out", "X", "--sampling-accept", "1.5"],
    ["--out", "X", "--bogus"],
    ["--out", "X", "--preset", "tiny-moe", "--experts-per-tok", "9"],
    ["--out", "X", "--tiny", "--experts", "8"],  # experts without --moe-inter
    ["--out", "X", "--preset", "moe-large"],
    ["--out", "X", "--preset", "tiny-deepseek", "--experts", "0"],  # MLA without experts
])
def test_bad_input_one_line_exit_2(argv, tmp_path, capsys):
    argv = [str(tmp_path / "o") if x == "X" else x for x in argv]
    assert M.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("models: error:"), err
    assert not os.path.exists(tmp_path / "o")


def test_module_entry_point(tmp_path):
    r = subprocess.run([sys.executable, "-m", "adaptive_spec.bench.models", "--out",
                        str(tmp_path / "o"), "--drafts", "dial:2"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr


# ---------------------------------------------------------------------------- SGLang
# A one-process gloo "distributed" SGLang on CPU, enough to build model classes and load weights.
SGLANG_CPU_PREAMBLE = textwrap.dedent(r'''
    import json, os, sys, types
    # SGLang's RotaryEmbedding imports vllm's kernel on a machine that is neither CUDA nor
    # its CPU engine; load_weights never calls it.
    vllm = types.ModuleType("vllm"); ops = types.ModuleType("vllm._custom_ops")
    ops.rotary_embedding = lambda *a, **k: None; vllm._custom_ops = ops
    sys.modules["vllm"] = vllm; sys.modules["vllm._custom_ops"] = ops
    import warnings; warnings.filterwarnings("ignore")
    import torch
    from safetensors.torch import load_file
    from sglang.srt.distributed import parallel_state as ps
    ps.init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                    distributed_init_method="file://" + sys.argv[2])
    ps.initialize_model_parallel(tensor_model_parallel_size=1)
    from sglang.srt.server_args import ServerArgs, set_global_server_args_for_scheduler
    sa = ServerArgs(model_path="dummy", device="cpu")
    set_global_server_args_for_scheduler(sa)
    from sglang.srt.configs.model_config import ModelConfig

    def load_nan_filled(model, path):
        """Every parameter NaN, then the checkpoint through the model's own load_weights:
        a parameter still NaN afterwards was never written."""
        params = dict(model.named_parameters())
        for p in params.values():
            p.data.fill_(float("nan"))
        ck = load_file(os.path.join(path, "model.safetensors"))
        model.load_weights(iter(ck.items()))
        return params, ck
''')

SGLANG_LOAD = SGLANG_CPU_PREAMBLE + textwrap.dedent(r'''
    from sglang.srt.models.llama import LlamaForCausalLM
    from sglang.srt.models.llama_eagle3 import LlamaForCausalLMEagle3

    root = sys.argv[1]
    report = {}

    def expected(ck, draft):
        """checkpoint tensors -> SGLang parameter names (stacked q/k/v, gate/up)."""
        out = {}
        for name, t in ck.items():
            if name in ("d2t", "t2d"):
                continue
            n = name.replace("midlayer.", "model.layers.0.") if draft else name
            if draft and not n.startswith(("model.", "lm_head")):
                n = "model." + n
            out[n] = t
        for key in [k for k in out if ".q_proj." in k]:
            base = key.replace(".q_proj.", ".qkv_proj.")
            out[base] = torch.cat([out.pop(key), out.pop(key.replace(".q_proj.", ".k_proj.")),
                                   out.pop(key.replace(".q_proj.", ".v_proj."))])
        for key in [k for k in out if ".gate_proj." in k]:
            out[key.replace(".gate_proj.", ".gate_up_proj.")] = torch.cat(
                [out.pop(key), out.pop(key.replace(".gate_proj.", ".up_proj."))])
        return out

    for name in sys.argv[3:]:
        path = os.path.join(root, name)
        draft = name != "target"
        mc = ModelConfig(path, is_draft_model=draft)
        cls = LlamaForCausalLMEagle3 if draft else LlamaForCausalLM
        assert mc.hf_config.architectures == [cls.__name__], mc.hf_config.architectures
        model = cls(mc.hf_config)
        params, ck = load_nan_filled(model, path)
        exp = expected(ck, draft)
        # the draft shares the target's embed_tokens (set_embed), not in its checkpoint
        skip = {"model.embed_tokens.weight"} if draft else set()
        unset = sorted(n for n, p in params.items() if n not in skip and torch.isnan(p).any())
        missing = sorted(set(exp) - set(params))
        wrong = sorted(n for n in exp if n in params and not torch.equal(
            params[n].data.float(), exp[n].float()))
        r = {"params": len(params), "unset": unset, "unknown_names": missing, "wrong": wrong}
        if draft:
            hot = ck["d2t"] + torch.arange(ck["d2t"].numel())
            r["hot_ok"] = bool(torch.equal(model.hot_token_id, hot))
            r["lm_head"] = list(model.lm_head.weight.shape)
        else:
            ids = json.load(open(os.path.join(root, sys.argv[4], "config.json"))).get(
                "eagle_config", {}).get("eagle_aux_hidden_state_layer_ids")
            model.set_eagle3_layers_to_capture(ids)
            r["capture"] = list(model.model.layers_to_capture)
        report[name] = r
    print("REPORT " + json.dumps(report))
''')


@pytest.mark.skipif(importlib.util.find_spec("sglang") is None, reason="sglang not installed")
def test_checkpoints_load_with_sglang_model_classes(built, tmp_path):
    script = tmp_path / "load.py"
    script.write_text(SGLANG_LOAD)
    names = ["target", "draft-dial-0.7", "draft-random", "draft-aligned"]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    r = subprocess.run([sys.executable, str(script), built, str(tmp_path / "gloo")] + names,
                       capture_output=True, text=True, timeout=240, env=env)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("REPORT ")]
    assert r.returncode == 0 and lines, r.stderr[-3000:]
    rep = json.loads(lines[-1][len("REPORT "):])
    for name in names:
        x = rep[name]
        assert x["unset"] == [] and x["unknown_names"] == [] and x["wrong"] == [], (name, x)
    assert rep["target"]["capture"] == [1, 2, 3]  # three distinct layers of a 4-layer target
    for name in names[1:]:
        assert rep[name]["hot_ok"] and rep[name]["lm_head"] == [2048, 256]


# ---------------------------------------------------------------------------- MoE targets
def build_tiny(tmp_path_factory, preset: str) -> str:
    out = str(tmp_path_factory.mktemp(f"synthetic-{preset}"))
    assert M.main(["--out", out, "--preset", preset, "--drafts", "aligned,dial:0.7",
                   "--device", "cpu"]) == 0
    return out


def assert_cycle_and_dial(model_dir: str, preset: str):
    """The reference target follows the cycle and the dial-0.7 draft simulates to 0.7; returns
    (shape, plan, target) for further checks."""
    shape = M.shape_from_preset(preset)
    plan = M.make_plan(shape, 0)
    T = M.RefTarget(os.path.join(model_dir, "target"), capture=shape.capture_layers())
    ys = plan.order
    logits, _, _ = T.forward(ys, torch.zeros_like(ys), M.KV(T.L), self_only=True)
    assert torch.equal(torch.argmax(logits, dim=-1), plan.next_tok[ys])
    r = M.simulate("", "", requests=8, new_tokens=128, steps=3, seed=11,
                   draft=M.RefDraft(os.path.join(model_dir, "draft-dial-0.7"), T))
    assert abs(r["acceptance"] - 0.7) <= TOL, r["acceptance"]
    return shape, plan, T


@pytest.fixture(scope="module")
def built_moe(tmp_path_factory):
    return build_tiny(tmp_path_factory, "tiny-moe")


def test_moe_target_runs_router_and_experts_and_follows_the_cycle(built_moe):
    shape, plan, T = assert_cycle_and_dial(built_moe, "tiny-moe")
    # the router spreads tokens over every expert: all experts really run
    x = M.rms_norm(T.embed[plan.order], T.w["model.layers.0.post_attention_layernorm.weight"], T.eps)
    routed = M._lin(x, T.w["model.layers.0.mlp.gate.weight"]).topk(shape.experts_per_tok, dim=-1).indices
    assert set(routed.unique().tolist()) == set(range(shape.experts))


SGLANG_LOAD_MOE = SGLANG_CPU_PREAMBLE + textwrap.dedent(r'''
    from sglang.srt.layers.dp_attention import initialize_dp_attention
    from sglang.srt.layers.moe.utils import initialize_moe_config
    import importlib
    module, cls = sys.argv[3].split(":")  # the SGLang model class of this MoE layout
    initialize_moe_config(sa)
    path = os.path.join(sys.argv[1], "target")
    mc = ModelConfig(path)
    initialize_dp_attention(sa, mc)
    model = getattr(importlib.import_module(module), cls)(mc.hf_config)
    params, ck = load_nan_filled(model, path)
    w13 = params["model.layers.1.mlp.experts.w13_weight"].data
    want = torch.cat([ck["model.layers.1.mlp.experts.3.gate_proj.weight"],
                      ck["model.layers.1.mlp.experts.3.up_proj.weight"]])
    ids = json.load(open(os.path.join(sys.argv[1], "draft-dial-0.7", "config.json")))[
        "eagle_config"]["eagle_aux_hidden_state_layer_ids"]  # 4 layers: the default collides
    model.set_eagle3_layers_to_capture(ids)
    print("REPORT " + json.dumps({
        "unset": sorted(n for n, p in params.items() if torch.isnan(p).any()),
        "w13": list(w13.shape), "expert3_ok": bool(torch.equal(w13[3], want)),
        "w2_zero": all(not p.data.any() for n, p in params.items() if n.endswith("w2_weight")),
        "o_zero": all(not p.data.any() for n, p in params.items() if n.endswith("o_proj.weight")),
        "arch": getattr(mc.attention_arch, "name", str(mc.attention_arch)),
        "capture": list(model.model.layers_to_capture)}))
''')


def load_moe_report(model_dir, sglang_class, tmp_path) -> dict:
    script = tmp_path / "load_moe.py"
    script.write_text(SGLANG_LOAD_MOE)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    r = subprocess.run([sys.executable, str(script), model_dir, str(tmp_path / "gloo"), sglang_class],
                       capture_output=True, text=True, timeout=240, env=env)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("REPORT ")]
    assert r.returncode == 0 and lines, r.stderr[-3000:]
    return json.loads(lines[-1][len("REPORT "):])


@pytest.mark.skipif(importlib.util.find_spec("sglang") is None, reason="sglang not installed")
def test_moe_checkpoint_loads_with_sglang_qwen3_moe(built_moe, tmp_path):
    rep = load_moe_report(built_moe, "sglang.srt.models.qwen3_moe:Qwen3MoeForCausalLM", tmp_path)
    assert rep["unset"] == [] and rep["expert3_ok"] and rep["w2_zero"], rep
    assert rep["w13"] == [4, 128, 256]  # 4 experts, gate+up of width 64, hidden 256
    assert rep["capture"] == [1, 2, 3]


# ---------------------------------------------------------------------------- DeepSeek-V3 target
@pytest.fixture(scope="module")
def built_deepseek(tmp_path_factory):
    return build_tiny(tmp_path_factory, "tiny-deepseek")


def test_deepseek_target_layers_add_nothing_and_the_dial_holds(built_deepseek):
    """The MLA target has no reference forward: its layers must be exact no-ops (o_proj and
    every down projection zero, the rest random at full size), so the cycle and the dial are
    the embedding's and the head's, as for the other targets."""
    w = M.load_safetensors(os.path.join(built_deepseek, "target"), "cpu")
    outs = [n for n in w if n.endswith(("o_proj.weight", "down_proj.weight"))]
    assert len(outs) == 4 + 1 + 3 * (4 + 1)  # o_proj per layer, 1 dense MLP, 3 MoE layers x (4 experts + shared)
    assert all(not w[n].any() for n in outs)
    assert w["model.layers.1.self_attn.kv_b_proj.weight"].std() > 0.01
    assert_cycle_and_dial(built_deepseek, "tiny-deepseek")


@pytest.mark.skipif(importlib.util.find_spec("sglang") is None, reason="sglang not installed")
def test_deepseek_checkpoint_loads_with_sglang_deepseek_v3(built_deepseek, tmp_path):
    rep = load_moe_report(built_deepseek, "sglang.srt.models.deepseek_v2:DeepseekV3ForCausalLM", tmp_path)
    assert rep["unset"] == [] and rep["expert3_ok"] and rep["w2_zero"] and rep["o_zero"], rep
    assert rep["arch"] == "MLA" and rep["w13"] == [4, 128, 256]
    # SGLang's DeepSeek adds 1 to the draft's layer ids only when they start at 1; ours for 4
    # layers are 0, 1, 2. Every layer is a no-op here, so each captured state is the embedding
    # either way (the 16- and 48-layer presets use the default ids).
    assert rep["capture"] == [0, 1, 2]
