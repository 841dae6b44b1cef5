"""The drop-in launcher against SGLang 0.5.16's real argument parser and ServerArgs."""

import json
import os
import subprocess
import sys

import pytest

from adaptive_spec.config import ENV_VAR, AdaptiveSpecConfig
from adaptive_spec.sglang_plugin import launch
from adaptive_spec.sglang_plugin.launch import UsageError, parse_args


def eagle_args(target, draft, *extra):
    return [
        "--model-path", target, "--device", "cpu", "--skip-tokenizer-init", "--port", "31555",
        "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", draft,
        "--mem-fraction-static", "0.3", "--max-running-requests", "256", *extra,
    ]  # fmt: skip


def test_full_command_line_plus_ours(tiny_models):
    target, draft = tiny_models
    server_args, cfg = parse_args(
        eagle_args(target, draft, "--speculative-num-steps", "3", "--adaptive-spec-threshold", "24",
                   "--adaptive-spec-queue-threshold", "6", "--adaptive-spec-min-accept-len", "1.6",
                   "--adaptive-spec-log-decisions")  # fmt: skip
    )
    assert cfg == AdaptiveSpecConfig(threshold=24, queue_threshold=6, min_accept_len=1.6, max_steps=3, log_decisions=True)
    # SGLang's own settings came through unchanged ...
    assert server_args.model_path == target and server_args.port == 31555
    assert server_args.mem_fraction_static == 0.3 and server_args.max_running_requests == 256
    assert server_args.speculative_algorithm == "EAGLE3"
    # ... and its adaptive machinery is sized for our candidates, starting at the max.
    assert server_args.speculative_adaptive is True
    assert (server_args.speculative_num_steps, server_args.speculative_eagle_topk) == (3, 1)
    assert server_args.speculative_num_draft_tokens == 4
    with open(server_args.speculative_adaptive_config) as fh:
        assert json.load(fh) == {"1": {"candidate_steps": [0, 3]}}


def test_off_disables_the_acceptance_floor_and_the_queue_check(tiny_models):
    target, draft = tiny_models
    _, cfg = parse_args(eagle_args(target, draft, "--adaptive-spec-min-accept-len", "off",
                                   "--adaptive-spec-queue-threshold", "off"))
    assert cfg.min_accept_len is None and cfg.queue_threshold is None
    _, cfg = parse_args(eagle_args(target, draft, "--adaptive-spec-threshold", "24"))
    assert cfg.min_accept_len == 1.5  # the default floor


def test_our_config_file_and_flags_merge(tiny_models, tmp_path):
    target, draft = tiny_models
    path = tmp_path / "as.json"
    path.write_text(json.dumps({"threshold": 40, "hysteresis": 4, "max_steps": 5}))
    _, cfg = parse_args(eagle_args(target, draft, "--adaptive-spec-config", str(path), "--adaptive-spec-threshold", "20"))
    assert (cfg.threshold, cfg.hysteresis, cfg.max_steps) == (20, 4, 5)  # the flag wins


def test_the_goodput_model_flag_reaches_the_policy(tiny_models):
    target, draft = tiny_models
    _, cfg = parse_args(eagle_args(target, draft, "--adaptive-spec-policy", "goodput"))
    assert cfg.goodput_model == "realized"  # the default: what each k delivered counts
    _, cfg = parse_args(eagle_args(target, draft, "--adaptive-spec-policy", "goodput",
                                   "--adaptive-spec-goodput-model", "parts"))
    assert cfg.goodput_model == "parts"
    from adaptive_spec.policy.goodput import GoodputPolicy
    assert GoodputPolicy(cfg).calibrate is False


def test_without_our_flags_it_is_sglang(tiny_models):
    from sglang.srt.server_args import prepare_server_args

    target, draft = tiny_models
    argv = eagle_args(target, draft, "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4")
    ours, cfg = parse_args(argv)
    theirs = prepare_server_args(argv)
    assert cfg is None and ours.speculative_adaptive is False
    skip = {"speculative_adaptive_config", "random_seed", "model_config"}  # a fresh seed per parse; a cached object
    diff = {k for k in vars(theirs) if k not in skip and getattr(ours, k) != getattr(theirs, k)}
    assert diff == set()


BAD = [
    (["--adaptive-spec-threshold", "0"], "--adaptive-spec-threshold: must be >= 1"),
    (["--adaptive-spec-threshold", "-4"], "--adaptive-spec-threshold: must be >= 1"),
    (["--adaptive-spec-threshold", "many"], "argument --adaptive-spec-threshold: invalid int value"),
    (["--adaptive-spec-queue-threshold", "0"], "--adaptive-spec-queue-threshold: must be >= 1"),
    (["--adaptive-spec-queue-threshold", "x"], "--adaptive-spec-queue-threshold: must be an integer or 'off'"),
    (["--adaptive-spec-min-accept-len", "abc"], "argument --adaptive-spec-min-accept-len: must be a number or 'off'"),
    (["--adaptive-spec-policy", "fastest"], "--adaptive-spec-policy: unknown policy 'fastest'"),
    (["--adaptive-spec-config", "/nonexistent/as.json"], "--adaptive-spec-config: file '/nonexistent/as.json' does not exist"),
    (["--adaptive-spec-threshold", "8", "--adaptive-spec-hysteresis", "9"], "--adaptive-spec-hysteresis: 9 must be below"),
    (["--speculative-eagle-topk", "4", "--adaptive-spec-threshold", "8"], "--speculative-eagle-topk: adaptive-spec drafts topk=1"),
    (["--speculative-adaptive", "--adaptive-spec-threshold", "8"], "--speculative-adaptive: SGLang's built-in adaptive mode"),
    (["--enable-two-batch-overlap", "--adaptive-spec-threshold", "8"], "--enable-two-batch-overlap: is not supported"),
    (["--enable-pdmux", "--adaptive-spec-threshold", "8"], "--enable-pdmux: is not supported"),
    (["--enable-dp-attention", "--adaptive-spec-threshold", "8"], "--enable-dp-attention: is not supported"),
    (["--speculative-num-steps", "3", "--adaptive-spec-max-steps", "5"], "--adaptive-spec-max-steps: 5 conflicts"),
    (["--adaptive-spec-force", "maybe"], "--adaptive-spec-force: must be 'off', 'on' or 'flap:N'"),
    (["--adaptive-spec-plain-kv", "keep"], "--adaptive-spec-plain-kv: unknown choice 'keep'"),
    (["--adaptive-spec-goodput-model", "guess"], "--adaptive-spec-goodput-model: unknown choice 'guess'"),
]


@pytest.mark.parametrize("extra, message", BAD, ids=[" ".join(b[0]) for b in BAD])
def test_bad_input_one_line_exit_2(tiny_models, capsys, extra, message):
    target, draft = tiny_models
    with pytest.raises(SystemExit) as exit_info:
        launch.main(eagle_args(target, draft, *extra))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("adaptive-spec-server: error: ")
    assert message in err[0]
    assert ENV_VAR not in os.environ


def test_adaptive_flags_without_eagle(tiny_models, capsys):
    target, _ = tiny_models
    with pytest.raises(SystemExit) as exit_info:
        launch.main(["--model-path", target, "--device", "cpu", "--adaptive-spec-threshold", "8"])
    assert exit_info.value.code == 2
    assert "--speculative-algorithm: adaptive-spec needs EAGLE or EAGLE3 (got none)" in capsys.readouterr().err


def test_bad_config_file_contents(tiny_models, tmp_path):
    target, draft = tiny_models
    for text, words in (("{oops", "not valid JSON"), ('{"threshold": 8, "turbo": 1}', "unknown key(s) turbo")):
        path = tmp_path / "c.json"
        path.write_text(text)
        with pytest.raises(UsageError, match=words.replace("(", r"\(").replace(")", r"\)")):
            parse_args(eagle_args(target, draft, "--adaptive-spec-config", str(path)))


def test_goodput_policy_builds_every_step_count(tiny_models):
    target, draft = tiny_models
    server_args, cfg = parse_args(eagle_args(target, draft, "--adaptive-spec-policy", "goodput", "--adaptive-spec-max-steps", "4"))
    assert cfg.policy == "goodput" and server_args.speculative_num_steps == 4
    with open(server_args.speculative_adaptive_config) as fh:
        assert json.load(fh) == {"1": {"candidate_steps": [0, 1, 2, 3, 4]}}


def run_cli(*args, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "adaptive_spec.launch_server", *args],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def test_help_lists_our_group_and_sglang_flags():
    proc = run_cli("--help")
    assert proc.returncode == 0
    assert "adaptive-spec:" in proc.stdout
    for flag in ("--adaptive-spec-threshold", "--adaptive-spec-queue-threshold", "--adaptive-spec-hysteresis",
                 "--adaptive-spec-min-accept-len", "--adaptive-spec-policy", "--adaptive-spec-max-steps",
                 "--adaptive-spec-config", "--adaptive-spec-log-decisions", "--speculative-algorithm", "--model-path"):  # fmt: skip
        assert flag in proc.stdout


def test_real_process_exit_code_and_no_traceback(tiny_models):
    target, draft = tiny_models
    proc = run_cli(*eagle_args(target, draft, "--adaptive-spec-threshold", "zero"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert lines == ["adaptive-spec-server: error: argument --adaptive-spec-threshold: invalid int value: 'zero'"]


def test_readme_main_command_builds_models_and_its_server_command_parses(tmp_path):
    """scripts/serve.sh (the README's first command) with a dry run: it builds the synthetic
    pair (tiny preset here) and its server command passes SGLang's parser and ours."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / ".complete").touch()
    py = venv / "bin" / "python"  # this interpreter, with its packages, as the "venv"
    py.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    py.chmod(0o755)
    models = tmp_path / "models"
    env = dict(os.environ, ADAPTIVE_SPEC_SERVE_VENV=str(venv), ADAPTIVE_SPEC_MODELS=str(models),
               ADAPTIVE_SPEC_MODEL_PRESET="tiny", ADAPTIVE_SPEC_SERVE_DRY_RUN="1",
               CUDA_VISIBLE_DEVICES="")
    r = subprocess.run(["bash", os.path.join(root, "scripts", "serve.sh")], cwd=root, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    cmd = r.stdout.strip().splitlines()
    assert cmd[0] == str(venv / "bin" / "adaptive-spec-server")
    for d in ("target", "draft-dial-0.7", "draft-aligned", "draft-random"):
        assert (models / d / "model.safetensors").exists()
    server_args, cfg = parse_args(cmd[1:] + ["--device", "cpu"])
    assert cfg == AdaptiveSpecConfig(threshold=32, min_accept_len=1.5, max_steps=3)
    assert server_args.speculative_draft_model_path == str(models / "draft-dial-0.7")
    assert (server_args.host, server_args.port) == ("127.0.0.1", 30000)
    assert server_args.enable_metrics  # /metrics carries our series (README, Prometheus)


@pytest.mark.parametrize("target, draft, says", [
    ("{tmp}", None, "ADAPTIVE_SPEC_TARGET is set but ADAPTIVE_SPEC_DRAFT is not"),
    ("{tmp}/no-target", "{tmp}", "ADAPTIVE_SPEC_TARGET={tmp}/no-target does not exist"),
    ("{tmp}", "{tmp}/no-draft", "ADAPTIVE_SPEC_DRAFT={tmp}/no-draft does not exist"),
])
def test_readme_main_command_refuses_a_model_pair_it_cannot_serve_in_one_line(tmp_path, target,
                                                                            draft, says):
    """Your own target without its draft (the synthetic draft would be served beside it), or
    a local path that is not there: one line, exit 2, before a venv is made."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    venv = tmp_path / "venv"  # never made: the check comes first
    env = dict(os.environ, ADAPTIVE_SPEC_SERVE_VENV=str(venv),
               ADAPTIVE_SPEC_TARGET=target.format(tmp=tmp_path))
    env.pop("ADAPTIVE_SPEC_DRAFT", None)
    if draft is not None:
        env["ADAPTIVE_SPEC_DRAFT"] = draft.format(tmp=tmp_path)
    r = subprocess.run(["bash", os.path.join(root, "scripts", "serve.sh")], cwd=root, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("serve.sh: error: "), r.stderr
    assert says.format(tmp=tmp_path) in lines[0]
    assert not venv.exists()


@pytest.mark.parametrize("extra, env, expected", [
    ((), None, "adaptive_spec_extend"),
    (("--warmups", "voice_chat"), None, "voice_chat,adaptive_spec_extend"),
    (("--warmups", "adaptive_spec_extend"), None, "adaptive_spec_extend"),
    (("--adaptive-spec-catchup", "newest"), None, None),
    (("--adaptive-spec-off-path", "decode-lean"), None, None),
    ((), "0", None),
])
def test_the_extend_warmup_is_added_where_a_full_catchup_can_run(tiny_models, monkeypatch, extra, env, expected):
    """GPU, session 27: without it a full catch-up on the MoE layout waited 0.75-1.43 s for
    Triton's fused-MoE builds at each new token count."""
    target, draft = tiny_models
    if env is None:
        monkeypatch.delenv("ADAPTIVE_SPEC_WARM_EXTEND", raising=False)
    else:
        monkeypatch.setenv("ADAPTIVE_SPEC_WARM_EXTEND", env)
    server_args, _ = parse_args(eagle_args(target, draft, "--attention-backend", "triton",
                                           "--adaptive-spec-policy", "goodput", *extra))
    assert server_args.warmups == expected


def test_the_switch_warmup_runs_after_the_extend_warmup_only_where_asked(tiny_models, monkeypatch):
    """Opt-in (session 64): a switch back on's kernels built at start."""
    target, draft = tiny_models
    monkeypatch.delenv("ADAPTIVE_SPEC_WARM_EXTEND", raising=False)
    monkeypatch.setenv("ADAPTIVE_SPEC_WARM_SWITCH", "1")
    server_args, _ = parse_args(eagle_args(target, draft, "--attention-backend", "triton",
                                           "--adaptive-spec-policy", "goodput"))
    assert server_args.warmups == "adaptive_spec_extend,adaptive_spec_switch"
    plain_args, cfg = parse_args(["--model-path", target, "--device", "cpu", "--skip-tokenizer-init",
                                  "--attention-backend", "triton"])
    assert cfg is None and plain_args.warmups is None  # no flags of ours: nothing to switch


def test_no_extend_warmup_without_our_flags_or_where_the_catchup_cannot_run(tiny_models):
    target, draft = tiny_models
    plain_args, cfg = parse_args(["--model-path", target, "--device", "cpu", "--skip-tokenizer-init",
                                  "--attention-backend", "triton"])
    assert cfg is None and plain_args.warmups is None
    server_args, _ = parse_args(eagle_args(target, draft, "--attention-backend", "torch_native", "--page-size", "16",
                                           "--adaptive-spec-policy", "goodput"))
    assert server_args.warmups is None  # page size > 1: no full catch-up
