"""The GPU-machine helper scripts that turn runs into committed results, on CPU: the greedy
dial table from the committed sweeps, and the continuous-arrival probe against a FAKE server."""
import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from conftest import fake_attached

ROOT = Path(__file__).resolve().parents[2]
DEVICE = ROOT / "scripts" / "device"
RESULTS = ROOT / "benchmarks" / "results"


def test_dial_table_from_the_committed_sweeps(tmp_path):
    out = tmp_path / "dial.json"
    sweeps = [RESULTS / f"2026-11-29-sweep-{n}.json" for n in ("dial-0.5", "dial-0.9", "always-wrong-all4")]
    r = subprocess.run([sys.executable, str(DEVICE / "dial_from_sweeps.py"), str(out), *map(str, sweeps)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [row["requested"] for row in rows] == [0.5, 0.9]  # the random draft is no dial
    for row in rows:
        assert abs(row["measured"] - row["requested"]) <= 0.05 and row["requests"] > 100
        # 1 + p + p^2 + p^3 is the accept length the measured p stands for
        p = row["measured"]
        assert abs(sum(p ** j for j in range(4)) - row["mean_accept_len"]) < 1e-3


def test_continuous_probe_keeps_n_requests_in_flight_and_counts_tokens(tmp_path):
    sp = fake_attached("--fake-delay-s", "0.001")
    try:
        out = tmp_path / "cont.jsonl"
        r = subprocess.run([sys.executable, "continuous_probe.py", "--name", "fake", "--port", str(sp.port),
                            "--pid", str(sp.proc.pid), "--n", "4", "--vocab", "1000", "--load-s", "2",
                            "--warm-s", "0.5", "--profile-steps", "0", "--out", str(out)],
                           cwd=DEVICE, capture_output=True, text=True, timeout=120)
    finally:
        sp.stop(5)
    assert r.returncode == 0, r.stderr
    rec = json.loads(out.read_text().splitlines()[-1])
    assert rec["errors"] == 0 and rec["tokens"] > 0 and rec["output_tok_s"] > 0
    assert "profiled" not in rec


def test_pack_out_leaves_few_files_for_the_8_file_cap(tmp_path):
    """At most 8 files come back from the GPU machine; session 9 lost 8 result files to that.
    pack_out.sh folds everything but run.log and the log tarballs into one tarball."""
    import tarfile

    for i in range(12):
        (tmp_path / f"sweep-{i}.json").write_text(str(i))
    (tmp_path / "run.log").write_text("log")
    (tmp_path / "logs-a.tar.xz").write_bytes(b"")
    r = subprocess.run(["bash", str(DEVICE / "pack_out.sh"), "v"], env={"OUT": str(tmp_path), "PATH": "/usr/bin:/bin"},
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs-a.tar.xz", "results-v.tar.xz", "run.log"]
    with tarfile.open(tmp_path / "results-v.tar.xz") as t:
        assert sorted(t.getnames()) == sorted(f"sweep-{i}.json" for i in range(12))


def _option_strings(parser) -> set:
    out = set()
    for action in parser._actions:
        out.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):  # the CLI's sub-commands
            for sub in action.choices.values():
                out |= _option_strings(sub)
    return out


def test_every_device_script_parses():
    for script in sorted(DEVICE.glob("*.sh")):
        r = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, f"{script.name}: {r.stderr}"


def test_the_runs_written_for_the_next_gpu_session_use_only_flags_that_exist():
    """call_s37.sh to call_s59.sh have (partly) never run: every --flag
    they pass is one the sweep, paired or sample_summary commands or our server know, so a typo
    does not cost a device session."""
    import re

    from adaptive_spec.bench import cli, sample_summary
    from adaptive_spec.sglang_plugin.args import add_adaptive_spec_args
    from sglang.srt.server_args import ServerArgs

    server = argparse.ArgumentParser()
    add_adaptive_spec_args(server)
    known = _option_strings(cli.build_parser()) | _option_strings(server)
    # the other tools (sample_summary, phase_summary, the model builder) build their parsers
    # inside main: read their add_argument lines
    for tool in Path(sample_summary.__file__).parent.glob("*.py"):
        known |= set(re.findall(r'add_argument\(\s*"(--[a-z0-9-]+)"', tool.read_text()))
    known |= {f"--{view[0]}" for view in sample_summary.VIEWS}  # added in a loop
    sglang = argparse.ArgumentParser()  # SGLang's own, through --server-arg or a system's args
    ServerArgs.add_cli_args(sglang)
    known |= _option_strings(sglang)
    known |= {"--query-gpu", "--format"}  # nvidia-smi's
    known |= {"--layers"}  # the model builder's shape overrides, added in a loop
    for name in ("call_s37.sh", "call_s38.sh", "call_s39.sh", "call_s40.sh", "call_s41.sh",
                 "call_s42.sh", "call_s43.sh", "call_s44.sh", "call_s45.sh", "call_s46.sh",
                 "call_s47.sh", "call_s48.sh", "call_s59.sh"):
        code = "\n".join(line for line in (DEVICE / name).read_text().splitlines()
                         if not line.lstrip().startswith("#"))
        used = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", code))
        assert used, name
        assert used <= known, f"{name}: unknown flags {sorted(used - known)}"


def test_a_sweeps_log_dir_drops_an_earlier_calls_logs_once_per_call(tmp_path):
    """The servers append to their logs: on a machine still warm from the last device call, a
    sweep of the same name read that call's sample rows as its own (sessions 49-50)."""
    logs = tmp_path / "logs-fs"

    def fresh(call):
        r = subprocess.run(["bash", str(DEVICE / "fresh_log_dir.sh"), str(logs), call],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr

    fresh("100")
    (logs / "server-plain.log").write_text("call 100's lines\n")
    fresh("100")  # a second sweep of the same name in the same call keeps them
    assert (logs / "server-plain.log").read_text() == "call 100's lines\n"
    fresh("200")  # the next call starts empty
    assert logs.is_dir() and not (logs / "server-plain.log").exists()


def test_the_log_report_shows_the_warm_up_and_the_kernels_a_slow_result_built(tmp_path):
    """Session 61: a catch-up's kernel build on the DeepSeek-V3 layout was found in the packed
    logs, not in the call's tail; the report now prints those lines (and the extend warm-up's)."""
    log = tmp_path / "server-adaptive-spec_goodput.log"
    log.write_text(
        "[t] adaptive_spec: extend kernels warmed for 33 prompt lengths, 15 to 4088 tokens\n"
        "[t] adaptive_spec: Triton kernels built in that 1273-ms result: _fwd_kernel\n"
        "[t] Decode batch, #running-req: 16\n")
    fn = re.search(r"^log_report\(\) \{.*?^\}", (DEVICE / "common.sh").read_text(), re.S | re.M)
    script = fn.group(0) + '\npack_logs() { :; }\nlog_report archive.tar.xz "$1"\n'
    r = subprocess.run(["bash", "-c", script, "bash", str(log)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    assert "extend kernels warmed" in r.stdout and "built in that 1273-ms result" in r.stdout
    assert "Decode batch" not in r.stdout
