"""Server management with the FAKE SGLang server as a subprocess; the system table."""
import json
import os
import sys
import time

import pytest

from adaptive_spec.bench import servers as sv
from adaptive_spec.bench.loadgen import BenchError

FAKE = os.path.join(os.path.dirname(__file__), "fake_sglang_server.py")


def fake_proc(tmp_path, name="plain", *extra):
    port = sv.free_port()
    cmd = [sys.executable, FAKE, "--host", "127.0.0.1", "--port", str(port), *extra]
    return sv.ServerProcess(name, cmd=cmd, port=port, log_path=tmp_path / f"{name}.log")


def _gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie still answers kill(0); check its state
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] == "Z"
    except OSError:
        return True


def test_start_health_stop(tmp_path):
    sp = fake_proc(tmp_path, "plain", "--fake-startup-s", "0.5")
    sp.start()
    try:
        t = sp.wait_ready(30)
        assert t >= 0.4 and sp.start_s == t
        assert sp.health()
        code, info = sv.http_get_json(sp.url + "/server_info")
        assert code == 200 and info["version"] == "0.0-fake"
        assert os.getpgid(sp.proc.pid) == sp.proc.pid  # its own process group (setsid)
    finally:
        sp.stop(term_timeout_s=5)
    assert sp.proc.poll() is not None
    assert _gone(sp.proc.pid)
    assert not sp.health(timeout=1)
    assert "fake sglang server" in (tmp_path / "plain.log").read_text()
    d = sp.describe()
    assert d["start_s"] == sp.start_s and not d["attached"]


def test_early_death_is_noticed(tmp_path):
    sp = fake_proc(tmp_path, "eagle3", "--fake-startup-s", "60", "--fake-exit-after-s", "0.3",
                   "--fake-exit-code", "7")
    sp.start()
    t0 = time.time()
    with pytest.raises(sv.ServerDied) as e:
        sp.wait_ready(60, poll_s=0.2)
    assert time.time() - t0 < 30  # noticed long before the timeout
    assert "exited with code 7" in str(e.value)
    assert "fake sglang server" in str(e.value)  # the log tail is in the message
    sp.stop()


def test_not_ready_times_out(tmp_path):
    sp = fake_proc(tmp_path, "plain", "--fake-startup-s", "600")
    sp.start()
    try:
        with pytest.raises(sv.ServerDied, match="not ready within"):
            sp.wait_ready(1.5, poll_s=0.3)
    finally:
        sp.stop(term_timeout_s=5)
    assert _gone(sp.proc.pid)


def test_group_start_wait_stop(tmp_path):
    a = fake_proc(tmp_path, "plain")
    b = fake_proc(tmp_path, "eagle3", "--fake-exit-after-s", "0.5", "--fake-startup-s", "30")
    g = sv.ServerGroup([a, b])
    events = []
    g.start_all(stagger_s=0.2, on_event=lambda s, w: events.append((s.name, w)))
    errors = g.wait_all(30, poll_s=0.2, on_event=lambda s, w: events.append((s.name, w)))
    g.stop_all()
    assert list(errors) == ["eagle3"]
    assert ("plain", "ready") in events and ("eagle3", "died") in events
    assert _gone(a.proc.pid) and _gone(b.proc.pid)


def test_attach_mode_refuses_other_hosts():
    sp = sv.ServerProcess("plain", url="http://127.0.0.1:1")
    assert sp.attached and sp.alive()
    sp.start()          # nothing to start
    assert sp.stop() is None
    with pytest.raises(BenchError):
        sv.ServerProcess("plain", url="http://10.1.2.3:30000")
    with pytest.raises(BenchError):
        sv.http_get_json("http://example.com/health")


def test_system_table_and_overrides(tmp_path):
    for name in ("plain", "eagle3", "builtin-adaptive", "adaptive-spec:threshold",
                 "adaptive-spec:forced-off", "adaptive-spec:forced-on",
                 "adaptive-spec:flapping", "adaptive-spec:goodput"):
        assert sv.valid_system_name(name)
        sv.system_def(name)
    assert not sv.valid_system_name("adaptive-spec")
    assert not sv.valid_system_name("Plain")
    assert sv.system_def("plain").speculative is False
    assert sv.system_def("adaptive-spec:forced-off").extra == ["--adaptive-spec-force", "off"]
    assert sv.system_def("builtin-adaptive").extra == ["--speculative-adaptive"]
    over, app = sv.parse_system_args([
        "adaptive-spec:threshold=--adaptive-spec-threshold 64",
        "eagle3+=--foo 'a b'",
        "adaptive-spec:new=--adaptive-spec-policy goodput"])
    assert sv.system_def("adaptive-spec:threshold", over, app).extra == \
        ["--adaptive-spec-threshold", "64"]
    assert sv.system_def("eagle3", over, app).extra == ["--foo", "a b"]
    assert sv.system_def("adaptive-spec:new", over, app).launcher == "ours"
    with pytest.raises(BenchError, match="unknown variant"):
        sv.system_def("adaptive-spec:nope")
    with pytest.raises(BenchError):
        sv.parse_system_args(["no-equals-sign"])
    with pytest.raises(BenchError):
        sv.parse_system_args(["BAD=--x"])


def test_builtin_adaptive_steps(tmp_path):
    assert sv.builtin_adaptive_steps(None) == 7
    cfg = tmp_path / "ad.json"
    cfg.write_text(json.dumps({"1": {"candidate_steps": [1, 3]}, "8": {"candidate_steps": [0, 1]}}))
    assert sv.builtin_adaptive_steps(str(cfg)) == 3
    cfg.write_text("{}")
    with pytest.raises(BenchError):
        sv.builtin_adaptive_steps(str(cfg))
    with pytest.raises(BenchError):
        sv.builtin_adaptive_steps(str(tmp_path / "missing.json"))


def test_command_building():
    cmd = sv.build_command("py", "sglang.launch_server", "/m/t", 30001, ["--a", "1"],
                           sv.spec_args("/m/d", 3), ["--speculative-adaptive"], ["--a", "2"])
    assert cmd[:3] == ["py", "-m", "sglang.launch_server"]
    assert cmd[cmd.index("--port") + 1] == "30001"
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--speculative-num-draft-tokens") + 1] == "4"
    assert cmd[-2:] == ["--a", "2"]  # user flags last (they win)
    assert sv.cuda_graph_bs(256) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert sv.cuda_graph_bs(48) == [1, 2, 4, 8, 16, 32, 48]
    env = sv.child_env()
    assert "127.0.0.1" in env["NO_PROXY"].split(",")
    assert sv.llama_only_disabled_archs(["MixtralForCausalLM"]) is None


def _llama_dirs(tmp_path):
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
           "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "vocab_size": 1024, "max_position_embeddings": 4096,
           "rms_norm_eps": 1e-5, "torch_dtype": "bfloat16", "rope_theta": 10000.0,
           "tie_word_embeddings": False}
    dcfg = dict(cfg, architectures=["LlamaForCausalLMEagle3"], num_hidden_layers=1,
                draft_vocab_size=1024)
    t, d = tmp_path / "target", tmp_path / "draft"
    for p, c in ((t, cfg), (d, dcfg)):
        p.mkdir()
        (p / "config.json").write_text(json.dumps(c))
    return t, d


def test_generated_command_lines_resolve_with_sglang(tmp_path):
    """The sweep's server command lines parse and resolve with SGLang's own ServerArgs (on CPU,
    `--device cpu`), and ours parse with the adaptive-spec launcher's parser."""
    pytest.importorskip("sglang.srt.server_args")
    from sglang.srt.server_args import prepare_server_args

    from adaptive_spec.bench.sweep import Sweep, SweepConfig

    t, d = _llama_dirs(tmp_path)
    sw = Sweep(SweepConfig(target=str(t), draft=str(d), systems=[
        "plain", "eagle3", "builtin-adaptive", "adaptive-spec:threshold",
        "adaptive-spec:forced-off"]))
    by = {s.name: s for s in sw.build_servers()}
    for name in ("plain", "eagle3", "builtin-adaptive"):
        sa = prepare_server_args(by[name].cmd[3:] + ["--device", "cpu"])
        assert sa.max_running_requests == 256 and sa.skip_tokenizer_init
        assert sa.max_total_tokens == sw._kv_tokens()
        if name == "plain":
            assert sa.speculative_algorithm is None
        else:
            steps = 7 if name == "builtin-adaptive" else 3
            assert sa.speculative_algorithm == "EAGLE3"
            assert (sa.speculative_num_steps, sa.speculative_num_draft_tokens) == (steps, steps + 1)
            assert bool(sa.speculative_adaptive) == (name == "builtin-adaptive")
    try:
        from adaptive_spec.sglang_plugin.args import make_parser
    except ImportError:
        pytest.skip("adaptive_spec launcher not importable")
    ns = make_parser().parse_args(by["adaptive-spec:forced-off"].cmd[3:])
    assert ns.adaptive_spec_force == "off" and ns.speculative_num_steps == 3
    ns = make_parser().parse_args(by["adaptive-spec:threshold"].cmd[3:])
    assert ns.adaptive_spec_threshold == 32
