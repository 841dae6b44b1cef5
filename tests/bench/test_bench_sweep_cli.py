"""The sweep end to end against FAKE SGLang servers (started and attached), and the CLI's
handling of bad input (one line on stderr, exit status 2, no traceback)."""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adaptive_spec.bench import cli, schema
from conftest import fake_attached

FAST = ["--time-budget-s", "1", "--drain-s", "1", "--start-stagger-s", "0",
        "--sglang-launcher", "fake_sglang_server", "--ours-launcher", "fake_sglang_server",
        "--quiet"]


def test_sweep_starts_four_systems_and_writes_valid_json(tmp_path, fake_env, model_dirs, capsys):
    t, d = model_dirs
    out = tmp_path / "results" / "2026-11-29-fake.json"
    rc = cli.main(["sweep", "--target", str(t), "--draft", str(d),
                   "--systems", "plain,eagle3,builtin-adaptive,adaptive-spec:threshold",
                   "--concurrency", "1,4", "--new-tokens", "16", "--prompt-len", "8,12",
                   "--out", str(out), "--log-dir", str(tmp_path / "logs"),
                   "--system-args", "adaptive-spec:threshold+=--fake-status",
                   "--new-tokens-spread", "0.5", *FAST, "--time-budget-from", "4:1.5",
                   "--system-steps", "adaptive-spec:threshold=5"])
    assert rc == 0
    res = json.loads(out.read_text())
    assert schema.validate_file(out) == []
    assert res["workload"]["new_tokens_spread"] == 0.5
    assert res["workload"]["time_budget_from"] == {"4": 1.5}
    assert res["status"] == "complete"
    assert [(r["system"], r["concurrency"]) for r in res["rows"]] == [
        (s, n) for n in (1, 4) for s in ("plain", "eagle3", "builtin-adaptive",
                                         "adaptive-spec:threshold")]
    for r in res["rows"]:
        assert r["errors"] == 0 and r["output_tok_s"] > 0 and r["tpot_ms_p50"] > 0
    by = {(r["system"], r["concurrency"]): r for r in res["rows"]}
    assert by[("plain", 1)]["mean_accept_len"] is None
    assert by[("eagle3", 1)]["mean_accept_len"] > 2          # fake: 4 tokens per verify
    assert by[("eagle3", 4)]["tok_s_vs_envelope"] == pytest.approx(1.0, abs=0.05) or \
        by[("plain", 4)]["tok_s_vs_envelope"] == pytest.approx(1.0, abs=0.05)
    assert by[("adaptive-spec:threshold", 4)]["steps_histogram"]
    # the CPU each process used over the level: the client and the server the sweep launched
    for r in res["rows"]:
        assert {"client", "frontend"} <= set(r["cpu_util"]) and r["cpu_util"]["client"] > 0
        assert r["client_loop_lag_ms_p99"] >= r["client_loop_lag_ms_p50"] >= 0
        # what the level's cut-off left on the server, cleared before the next level (end_level)
        assert r["left_at_cutoff"]["running"] >= 0 and r["left_at_cutoff"]["settle_s"] >= 0
    # the level's decisions by reason and steps by mode (FAKE server: one per streamed chunk),
    # as differences of rank 0's counters like the histogram
    row = by[("adaptive-spec:threshold", 4)]
    assert sum(row["decisions"].values()) == sum(row["steps_histogram"].values())
    assert sum(row["step_modes"].values()) == sum(row["steps_histogram"].values())
    assert "decisions" not in by[("plain", 4)]
    # what the adaptive server reported after the last level is kept with the system
    assert "steps_histogram" in res["systems"]["adaptive-spec:threshold"]["final_status"][0]
    # ... with the results that held a kernel build (session 65's file could not say)
    assert res["systems"]["adaptive-spec:threshold"]["final_status"][0]["stalled_results"] == 0
    assert "final_status" not in res["systems"]["plain"]
    # ... and its cost model after each level, in the order run (plain has none)
    levels = res["systems"]["adaptive-spec:threshold"]["level_cost_model"]
    assert [e["concurrency"] for e in levels] == [1, 4]
    assert levels[0]["step_ms"] == {"1": {"0": 3.0, "3": 4.5}} and "prefill_batch_fit_ms" not in levels[0]
    assert "level_cost_model" not in res["systems"]["plain"]
    # a system's own steps (--system-steps) reach its command line and the result
    assert "--speculative-num-steps 5" in (tmp_path / "logs" / "server-adaptive-spec_threshold.log").read_text()
    assert res["systems"]["adaptive-spec:threshold"]["spec_steps"] == 5
    assert res["systems"]["eagle3"]["spec_steps"] == 3
    # builtin-adaptive was started at 7 steps (SGLang's default config needs that)
    cmd_log = (tmp_path / "logs" / "server-builtin-adaptive.log").read_text()
    assert "--speculative-adaptive" in cmd_log and "--speculative-num-steps 7" in cmd_log
    assert res["systems"]["builtin-adaptive"]["spec_steps"] == 7
    for s in res["systems"].values():
        assert s["start_s"] is not None and s["start_s"] >= 0
    assert set(res["lossless"]) == {"eagle3", "builtin-adaptive", "adaptive-spec:threshold"}
    assert all(v["identical_to_plain"] for v in res["lossless"].values())
    assert res["command"].startswith("adaptive-spec-bench sweep --target")
    assert "wrote" in capsys.readouterr().out
    # every server was stopped: no process left whose command line names our target dir
    assert _procs_with(str(t)) == []


def _procs_with(needle):
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{d}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmd and "fake_sglang_server" in cmd and state != "Z":
            found.append((int(d), cmd))
    return found


def test_sweep_attach_open_loop_and_step_pattern(tmp_path, model_dirs):
    t, _ = model_dirs
    a = fake_attached("--model-path", str(t))
    b = fake_attached("--model-path", str(t), "--speculative-algorithm", "EAGLE3",
                       "--fake-status", "--fake-lossy")
    try:
        out = tmp_path / "2026-11-29-open.json"
        rc = cli.main(["sweep", "--systems", "plain,adaptive-spec:threshold",
                       "--attach", f"plain={a.url}", "--attach", f"adaptive-spec:threshold={b.url}",
                       "--rate", "50,200", "--concurrency", "8", "--new-tokens", "8",
                       "--metrics-out", str(tmp_path / "metrics.txt"),
                       "--out", str(out), "--no-plot", "--no-warmup", *FAST])
        assert rc == 0
        res = json.loads(out.read_text())
        assert schema.validate_obj(res) == []
        assert res["workload"]["kind"] == "open"
        assert sorted({r["request_rate"] for r in res["rows"]}) == [50.0, 200.0]
        assert all(r["concurrency"] == 8 for r in res["rows"])
        assert res["systems"]["plain"]["launch"] == "attached"
        # an attached server's processes are not ours to read: the client's CPU only
        assert all(set(r["cpu_util"]) == {"client"} for r in res["rows"])
        # vocab came from the attached server's model path (config.json)
        assert "vocab 1000" in res["model"]
        # the fake's "lossy" mode changes tokens: the check must say so
        assert res["lossless"]["adaptive-spec:threshold"]["identical_to_plain"] is False
        # --metrics-out: one excerpt per level of the server that has /metrics, ours only
        m = (tmp_path / "metrics.txt").read_text().splitlines()
        assert [ln for ln in m if ln.startswith("#")][0].endswith("adaptive-spec:threshold open=50.0")
        assert sum(ln.startswith("# ") for ln in m) == 2
        assert sum(ln.startswith("adaptive_spec_draft_steps") for ln in m) == 2
        assert not any("prompt_tokens" in ln for ln in m)

        out2 = tmp_path / "2026-11-29-step.json"
        rc = cli.main(["sweep", "--systems", "plain,adaptive-spec:threshold",
                       "--attach", f"plain={a.url}", "--attach", f"adaptive-spec:threshold={b.url}",
                       "--pattern", "step", "--pattern-high", "6", "--duration-s", "1.5",
                       "--sample-interval-s", "0.1", "--new-tokens", "16",
                       "--out", str(out2), "--no-warmup", *FAST])
        assert rc == 0
        res = json.loads(out2.read_text())
        assert schema.validate_obj(res) == []
        assert res["workload"]["kind"] == "step"
        assert [r["phase"] for r in res["rows"] if r["system"] == "plain"] == [0, 1, 2]
        assert [r["concurrency"] for r in res["rows"] if r["system"] == "plain"] == [1, 6, 1]
        tl = [e for e in res["timeline"] if e["system"] == "adaptive-spec:threshold"]
        assert len(tl) >= 5 and any(e["steps"] is not None for e in tl)
        assert out2.with_suffix(".png").exists() or not _has_mpl()
    finally:
        a.stop(5)
        b.stop(5)


def test_profile_at_puts_a_trace_summary_into_that_levels_rows(tmp_path, model_dirs, monkeypatch):
    from adaptive_spec.bench import level_profile

    monkeypatch.setattr(level_profile, "LOAD_S", 1.0)
    t, _ = model_dirs
    a = fake_attached("--model-path", str(t))
    try:
        out = tmp_path / "2026-11-29-prof.json"
        rc = cli.main(["sweep", "--systems", "plain", "--attach", f"plain={a.url}",
                       "--concurrency", "2,4", "--profile-at", "4", "--profile-steps", "5",
                       "--repeat", "2",
                       "--new-tokens", "8", "--log-dir", str(tmp_path / "logs"),
                       "--out", str(out), "--no-plot", "--no-warmup", *FAST])
        assert rc == 0
        res = json.loads(out.read_text())
        assert schema.validate_obj(res) == []
        rows = {(r["concurrency"], r["repeat"]): r for r in res["rows"]}
        assert "profile" not in rows[(2, 0)] and "profile" not in rows[(2, 1)]
        assert "profile" not in rows[(4, 1)]  # the first repeat's profile answers; later ones cost ~40 s each
        prof = rows[(4, 0)]["profile"]
        assert prof["gpu_busy_ms"] == 0.04 and prof["host_thread"] == "1/1", prof
        assert prof["steps"] == 5 and (tmp_path / "logs" / "profile-plain-c4").is_dir()
        assert rows[(4, 0)]["output_tok_s"] > 0  # measured before, not during, the profiled run
    finally:
        a.stop(5)


def _has_mpl():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return False


def test_sweep_survives_a_server_that_dies(tmp_path, fake_env, model_dirs):
    t, d = model_dirs
    out = tmp_path / "2026-11-29-died.json"
    t0 = time.time()
    rc = cli.main(["sweep", "--target", str(t), "--draft", str(d), "--systems", "plain,eagle3",
                   "--system-args", "eagle3=--fake-exit-after-s 0.2 --fake-startup-s 30",
                   "--concurrency", "2", "--new-tokens", "8", "--out", str(out), "--no-plot",
                   "--log-dir", str(tmp_path / "logs"), *FAST])
    assert time.time() - t0 < 60
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["status"] == "partial"
    assert "exited with code" in res["systems"]["eagle3"]["error"]
    assert [r["system"] for r in res["rows"]] == ["plain"]
    assert schema.validate_obj(res) == []


def test_sweep_deadline_skips_levels(tmp_path, fake_env, model_dirs):
    t, d = model_dirs
    out = tmp_path / "2026-11-29-deadline.json"
    rc = cli.main(["sweep", "--target", str(t), "--systems", "plain", "--concurrency", "1,2,4",
                   "--new-tokens", "8", "--out", str(out), "--no-plot", "--deadline-s", "7",
                   "--min-start-s", "0", "--no-warmup", "--server-arg", "--fake-delay-s 0.1", *FAST])
    # each level may take up to budget + drain + 2 = 4 s: the third never fits in 7 s
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["status"] == "partial" and res["skipped"]
    assert 1 <= len(res["rows"]) < 3


def test_a_deadline_too_short_for_the_servers_to_start_launches_nothing(tmp_path, fake_env, model_dirs, capsys):
    """GPU, session 26: a deadline that left two cold servers 106 s to start spent 156 device
    seconds on a start that could not finish. One clear line and a non-zero exit instead."""
    t, _ = model_dirs
    out = tmp_path / "2026-12-02-short.json"
    rc = cli.main(["sweep", "--target", str(t), "--systems", "plain", "--concurrency", "1",
                   "--new-tokens", "8", "--out", str(out), "--no-plot", "--deadline-s", "100",
                   "--log-dir", str(tmp_path / "logs"), *FAST])
    assert rc != 0
    err = capsys.readouterr().err
    # 100 s of deadline less the 30-s margin, less what the set-up before the start took
    left = re.search(r"leaves the servers (\d+) s to start, under --min-start-s 150", err)
    assert left and 60 <= int(left.group(1)) <= 70, err
    assert "Traceback" not in err and not list((tmp_path / "logs").glob("server-*.log"))


def test_repeated_levels_pair_each_system_with_plain(tmp_path, fake_env, model_dirs):
    t, d = model_dirs
    out = tmp_path / "results" / "2026-11-30-repeat.json"
    rc = cli.main(["sweep", "--target", str(t), "--draft", str(d),
                   "--systems", "plain,adaptive-spec:threshold", "--concurrency", "2",
                   "--repeat", "3", "--new-tokens", "8", "--prompt-len", "8", "--out", str(out),
                   "--log-dir", str(tmp_path / "logs"), *FAST])
    assert rc == 0
    res = json.loads(out.read_text())
    assert schema.validate_file(out) == []
    # measured back to back, stored level by level, repeat by repeat
    assert [(r["system"], r["repeat"]) for r in res["rows"]] == [
        (s, k) for k in range(3) for s in ("plain", "adaptive-spec:threshold")]
    (p,) = res["paired_vs_plain"]
    assert p["system"] == "adaptive-spec:threshold" and p["repeats"] == 3
    # each ratio from the rows themselves: ours over plain's row of the same repeat
    tok = {(r["system"], r["repeat"]): r["output_tok_s"] for r in res["rows"]}
    expected = [tok[("adaptive-spec:threshold", k)] / tok[("plain", k)] for k in range(3)]
    assert p["ratios"] == pytest.approx(expected, abs=1e-4)
    assert p["ci95"] is not None and p["mean"] > 1  # the fake drafts 4 tokens a step
    assert res["lossless"]["adaptive-spec:threshold"]["identical_to_plain"] is True
    assert out.with_suffix(".png").exists()


def test_freeze_gc_after_the_warm_up_and_a_server_that_refuses_it_is_measured_anyway(tmp_path, fake_env, model_dirs):
    t, d = model_dirs
    out = tmp_path / "results" / "2026-12-03-freeze.json"
    rc = cli.main(["sweep", "--target", str(t), "--draft", str(d), "--systems", "plain,adaptive-spec:threshold",
                   "--concurrency", "2", "--new-tokens", "8", "--prompt-len", "8", "--out", str(out),
                   "--freeze-gc", "all", "--system-args", "adaptive-spec:threshold+=--fake-no-freeze-gc",
                   "--log-dir", str(tmp_path / "logs"), "--no-plot", *FAST])
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["systems"]["plain"]["gc_frozen"] is True
    # the resolved CUDA-graph backends as /server_info gives them
    assert res["systems"]["plain"]["server_info"]["cuda_graph_backends"] == {"decode": "full", "prefill": "breakable"}
    assert res["systems"]["adaptive-spec:threshold"]["gc_frozen"] is False
    assert {r["system"] for r in res["rows"]} == {"plain", "adaptive-spec:threshold"}
    assert schema.validate_file(out) == []


def run_cli(cli_cmd, *args, timeout=60):
    return subprocess.run(cli_cmd + list(args), capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("args, expect", [
    (["sweep", "--concurrency", "1,x"], "comma-separated integers"),
    (["sweep", "--systems", "plain,vllm", "--target", "/tmp"], "bad system name"),
    (["sweep", "--systems", "plain", "--attach", "plain=http://example.com:80"],
     "non-loopback"),
    (["sweep", "--systems", "plain", "--attach", "plain=http://10.0.0.1:30000"], "non-loopback"),
    (["sweep", "--systems", "plain"], "--target DIR is needed"),
    (["sweep", "--systems", "eagle3", "--target", "/nonexistent-dir"], "not a directory"),
    (["sweep", "--systems", "plain", "--attach", "eagle3=http://127.0.0.1:1"], "not in --systems"),
    (["sweep", "--systems", "plain,plain", "--target", "/tmp"], "given twice"),
    (["sweep", "--pattern", "zigzag"], "invalid choice"),
    (["sweep", "--systems", "adaptive-spec:unknownvariant", "--target", "/tmp",
      "--draft", "/tmp"], "unknown variant"),
    (["sweep", "--systems", "plain", "--target", "/tmp", "--system-args", "junk"],
     "bad --system-args"),
    (["sweep", "--systems", "plain", "--target", "/tmp", "--time-budget-s", "0"],
     "time-budget"),
    (["sweep", "--systems", "plain", "--target", "/tmp", "--warmup-tokens", "0"],
     "--warmup-tokens must be >= 1"),
    (["sweep", "--systems", "plain", "--target", "/tmp", "--time-budget-from", "128"],
     "expected N:SECONDS"),
    (["sweep", "--systems", "plain", "--target", "/tmp", "--time-budget-from", "0:5"],
     "N >= 1 and seconds > 0"),
    (["sweep", "--systems", "plain", "--target", "/tmp", "--new-tokens-spread", "1.5"],
     "--new-tokens-spread must be in [0, 1)"),
    (["sweep", "--systems", "plain", "--target", "/tmp", "--system-steps", "plain=5"],
     "not a speculative system this sweep starts"),
    (["sweep", "--systems", "eagle3", "--target", "/tmp", "--draft", "/tmp",
      "--system-steps", "eagle3=x"], "expected NAME=STEPS"),
    (["sweep", "--systems", "eagle3", "--target", "/tmp", "--draft", "/tmp",
      "--system-steps", "eagle3=40"], "steps must be in 1..16"),
    (["sweep", "--systems", "plain", "--target", "/tmp", "--concurrency", "1,4",
      "--profile-at", "8"], "not among the --concurrency levels"),
    (["sweep", "--systems", "plain", "--target", "/tmp", "--profile-steps", "0"],
     "--profile-steps must be >= 1"),
    (["sweep", "--systems", "plain", "--target", "/tmp", "--repeat", "0"],
     "--repeat must be in 1..20"),
    (["sweep", "--systems", "plain", "--target", "/tmp", "--pin-scheduler-cpus", "4095"],
     "CPU 4095 is not one this process may use"),
    (["sweep", "--systems", "plain", "--target", "/tmp", "--pin-scheduler-cpus", "1-x"],
     "expected CPU ids like 3,4"),
    (["sweep", "--systems", "plain", "--target", "/tmp", "--freeze-gc", "eagle3"],
     "--freeze-gc eagle3: not among the systems"),
    (["sweep", "--systems", "plain", "--target", "/tmp", "--repeat", "2", "--pattern", "step"],
     "--repeat is for closed/open levels"),
    (["plot", "/nonexistent/file.json"], "cannot read"),
    (["table", "/nonexistent/file.json"], "cannot read"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_one_line_exit_2(cli_cmd, args, expect):
    r = run_cli(cli_cmd, *args)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    err = r.stderr.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    assert expect in err, err


def test_no_subcommand_and_help(cli_cmd):
    r = run_cli(cli_cmd)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    r = run_cli(cli_cmd, "sweep", "--help")
    assert r.returncode == 0 and "--concurrency" in r.stdout


def test_plot_of_a_non_result_file(tmp_path, cli_cmd):
    p = tmp_path / "x.json"
    p.write_text('{"schema": "something-else"}')
    r = run_cli(cli_cmd, "plot", str(p))
    assert r.returncode == 2 and "not an adaptive-spec-bench/1 result" in r.stderr


def test_models_subcommand_forwards_argv(monkeypatch):
    import types

    seen = {}
    mod = types.ModuleType("adaptive_spec.bench.models")

    def main(argv):
        seen["argv"] = argv
        return 0

    mod.main = main
    monkeypatch.setitem(sys.modules, "adaptive_spec.bench.models", mod)
    assert cli.main(["models", "--out", "/tmp/x", "--dial", "0.7"]) == 0
    assert seen["argv"] == ["--out", "/tmp/x", "--dial", "0.7"]


def test_plot_and_table_of_written_result(tmp_path, fake_env, model_dirs, cli_cmd):
    pytest.importorskip("matplotlib")
    t, d = model_dirs
    out = tmp_path / "2026-11-29-small.json"
    rc = cli.main(["sweep", "--target", str(t), "--systems", "plain", "--concurrency", "1,2",
                   "--new-tokens", "8", "--out", str(out), "--no-plot", *FAST])
    assert rc == 0
    r = run_cli(cli_cmd, "plot", str(out))
    assert r.returncode == 0, r.stderr
    png = Path(str(out)[:-5] + ".png")
    assert png.exists() and png.read_bytes()[:4] == b"\x89PNG"
    r = run_cli(cli_cmd, "table", str(out))
    assert r.returncode == 0 and "plain" in r.stdout


def test_systems_take_turns_going_first_level_by_level(tmp_path, model_dirs, monkeypatch):
    """The first system at a level meets its first-use costs and the last one any deadline cut
    (session 5's SLO server lost its 256 level that way): the order rotates; rows are stored in
    the configured order all the same."""
    from adaptive_spec.bench import sweep as sweep_mod

    order = []
    real_one = sweep_mod.Sweep._one

    async def spy(self, sp, lv):
        order.append((lv[1], sp.name))
        return await real_one(self, sp, lv)

    monkeypatch.setattr(sweep_mod.Sweep, "_one", spy)
    t, _ = model_dirs
    a = fake_attached("--model-path", str(t))
    b = fake_attached("--model-path", str(t), "--speculative-algorithm", "EAGLE3")
    try:
        out = tmp_path / "2026-11-30-rot.json"
        rc = cli.main(["sweep", "--systems", "plain,eagle3", "--attach", f"plain={a.url}",
                       "--attach", f"eagle3={b.url}", "--concurrency", "1,2,3", "--new-tokens", "4",
                       "--out", str(out), "--no-plot", "--no-warmup", *FAST])
        assert rc == 0
        res = json.loads(out.read_text())
    finally:
        a.stop(5)
        b.stop(5)
    firsts = [order[i][1] for i in range(0, len(order), 2)]
    assert firsts == ["plain", "eagle3", "plain"], order
    assert [(r["concurrency"], r["system"]) for r in res["rows"]] == [
        (1, "plain"), (1, "eagle3"), (2, "plain"), (2, "eagle3"), (3, "plain"), (3, "eagle3")]


def test_paired_against_another_system_pools_session_31s_goodput_over_the_builtin_mode(cli_cmd):
    """`--of SYSTEM`: each repeat's ratio to that system's same repeat (issue 5's >= 2x of
    SGLang's built-in adaptive mode), here over session 31's two 128 / 256 runs."""
    res = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    files = [res / "2026-12-03-s31-dense-128-256-si4.json",
             res / "2026-12-03-s31-dense-128-256-si4-level-end.json"]
    r = subprocess.run(cli_cmd + ["paired", *map(str, files), "--system", "adaptive-spec:goodput",
                                  "--of", "builtin-adaptive"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    want = {}
    for f in files:
        rows = json.loads(f.read_text())["rows"]
        tok = {(x["system"], x["concurrency"], x["repeat"]): x["output_tok_s"] for x in rows}
        for (s, n, k), v in tok.items():
            if s == "adaptive-spec:goodput":
                want.setdefault(n, []).append(v / tok[("builtin-adaptive", n, k)])
    lines = r.stdout.strip().splitlines()
    for line, n in zip(lines, (128, 256)):
        mean = sum(want[n]) / len(want[n])
        assert line.startswith(f"N={n}: {mean:.3f}x builtin-adaptive +-") and "over 6 pairs" in line
    bad = subprocess.run(cli_cmd + ["paired", str(files[0]), "--system", "adaptive-spec:goodput",
                                    "--of", "nope"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "against nope" in bad.stderr


def test_paired_of_a_list_takes_the_best_of_them_in_each_repeat(cli_cmd, tmp_path):
    """`--of envelope,adaptive-spec:forced-on`: ours against the best of plain, static EAGLE-3
    at our largest step count (eagle3) and at 3 steps (forced on at 3): in repeat 0 forced-on
    is the best reference, in repeat 1 eagle3."""
    tok = {0: {"plain": 100.0, "eagle3": 110.0, "adaptive-spec:forced-on": 125.0,
               "adaptive-spec:goodput": 130.0},
           1: {"plain": 100.0, "eagle3": 120.0, "adaptive-spec:forced-on": 115.0,
               "adaptive-spec:goodput": 126.0}}
    rows = [{"system": s, "concurrency": 16, "repeat": k, "output_tok_s": v}
            for k, per in tok.items() for s, v in per.items()]
    f = tmp_path / "run.json"
    f.write_text(json.dumps({"rows": rows}))
    r = subprocess.run(cli_cmd + ["paired", str(f), "--system", "adaptive-spec:goodput",
                                  "--of", "envelope,adaptive-spec:forced-on"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    mean = (130 / 125 + 126 / 120) / 2
    assert r.stdout.startswith(f"N=16: {mean:.3f}x max(plain, eagle3, adaptive-spec:forced-on) +-")
    r = subprocess.run(cli_cmd + ["paired", str(f), "--system", "adaptive-spec:goodput",
                                  "--of", "envelope"], capture_output=True, text=True, timeout=60)
    assert r.stdout.startswith(f"N=16: {(130 / 110 + 126 / 120) / 2:.3f}x max(plain, eagle3) +-")
    bad = subprocess.run(cli_cmd + ["paired", str(f), "--system", "adaptive-spec:goodput",
                                    "--of", ","], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "bad --of" in bad.stderr


def test_paired_on_damaged_rows_says_so_in_one_line(tmp_path, capsys):
    """Rows of another shape (a damaged or hand-edited file: a row that is a string, a level
    whose throughput is text) are one line and exit 2, not a traceback. Found by damaging a
    committed sweep at random (`tests/unit/damage.py`)."""
    rows = [{"system": "plain", "concurrency": 16, "repeat": 0, "output_tok_s": 100.0},
            {"system": "adaptive-spec:goodput", "concurrency": 16, "repeat": 0,
             "output_tok_s": 110.0}]
    for damaged in (rows + ["x"], [dict(rows[0], output_tok_s="fast"), rows[1],
                                   dict(rows[0], system="eagle3", output_tok_s=90.0)]):
        f = tmp_path / "run.json"
        f.write_text(json.dumps({"rows": damaged}))
        code = cli.main(["paired", str(f), "--system", "adaptive-spec:goodput", "--of", "envelope"])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "validate FILE" in err, err


def test_paired_pools_the_committed_off_step_repeats_of_sessions_8_and_9(cli_cmd):
    """The README's "1.000x at 64 over 6 paired repeats" comes from this command."""
    res = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    r = subprocess.run(cli_cmd + ["paired", str(res / "2026-11-30-s8-off-paths-busy.json"),
                                  str(res / "2026-11-30-s9-off-barrier.json"),
                                  "--system", "adaptive-spec:forced-off-lean",
                                  "--system", "adaptive-spec:off-lean"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[0].startswith("N=64: 1.000x plain +-0.112 over 6 pairs")
    assert lines[1].startswith("N=256: 1.030x plain +-0.109 over 6 pairs")
    bad = subprocess.run(cli_cmd + ["paired", str(res / "2026-11-30-s9-off-barrier.json"),
                                    "--system", "nope"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_non_streamed_sweep_measures_throughput_and_checks_outputs(tmp_path, fake_env, model_dirs):
    # session 17: at 256 requests SGLang's HTTP front-end used ~0.8 of a core per plain server
    # (one stream event per token); non-streamed requests take it out of the measurement
    t, d = model_dirs
    out = tmp_path / "2026-11-30-nostream.json"
    rc = cli.main(["sweep", "--target", str(t), "--draft", str(d), "--systems", "plain,eagle3",
                   "--concurrency", "2,4", "--new-tokens", "8", "--no-stream", "--repeat", "2",
                   "--out", str(out), "--no-plot", *FAST])
    assert rc == 0
    res = json.loads(out.read_text())
    assert schema.validate_obj(res) == []
    assert res["workload"]["stream"] is False
    assert len(res["rows"]) == 8
    for r in res["rows"]:
        assert r["errors"] == 0 and r["output_tok_s"] > 0 and r["cpu_util"]["frontend"] >= 0
    assert res["lossless"]["eagle3"]["identical_to_plain"] is True


def test_the_warm_up_runs_on_the_pinned_cpus_as_the_levels_do(tmp_path, fake_env, model_dirs,
                                                               monkeypatch):
    """An adaptive server learns its step costs in the warm-up: it must run where the levels
    will (`--pin-scheduler-cpus`), pinned before the warm-up's requests and again at the level."""
    from adaptive_spec.bench import cpu_pin, sweep

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("a pin needs one CPU listed and one left over")
    events = []
    monkeypatch.setattr(cpu_pin.SchedulerPin, "pin",
                        lambda self, pid: events.append("pin") or {})
    warmup = sweep.Sweep.warmup

    async def recorded(self, sp):
        events.append("warm-up")
        await warmup(self, sp)
        events.append("warm-up done")

    monkeypatch.setattr(sweep.Sweep, "warmup", recorded)
    t, d = model_dirs
    out = tmp_path / "results" / "2026-12-07-pin.json"
    rc = cli.main(["sweep", "--target", str(t), "--draft", str(d), "--systems", "plain",
                   "--concurrency", "2", "--new-tokens", "8", "--prompt-len", "8", "--out",
                   str(out), "--pin-scheduler-cpus", str(min(os.sched_getaffinity(0))),
                   "--log-dir", str(tmp_path / "logs"), "--no-plot", *FAST])
    assert rc == 0
    assert events == ["warm-up", "pin", "warm-up done", "pin"]


def test_each_level_and_warm_up_says_when_it_began_as_the_server_logs_stamp_lines(
        tmp_path, fake_env, model_dirs):
    """A server's log lines are read against the sweep's levels (session 64 could not tell a
    warm-up's first second from a level's): each row and each system's warm-up carry their
    start in the logs' form, local time, to the millisecond."""
    import datetime

    t, d = model_dirs
    out = tmp_path / "results" / "2026-12-07-stamps.json"
    before = datetime.datetime.now()
    rc = cli.main(["sweep", "--target", str(t), "--draft", str(d), "--systems", "plain",
                   "--concurrency", "1,2", "--new-tokens", "8", "--prompt-len", "8", "--out",
                   str(out), "--log-dir", str(tmp_path / "logs"), "--no-plot", *FAST])
    assert rc == 0
    res = json.loads(out.read_text())

    def parse(stamp):
        return datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f")

    warm = parse(res["systems"]["plain"]["warmup_began"])
    levels = [parse(r["level_began"]) for r in res["rows"]]
    assert before - datetime.timedelta(seconds=1) <= warm < levels[0] < levels[1]
    assert schema.validate_file(out) == []
