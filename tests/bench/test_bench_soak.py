"""The soak driver end to end against FAKE servers (attached): counts, odd requests, memory
and KV sampling, probe comparison, the result schema, and its exit status."""
import json

from adaptive_spec.bench import cli, schema
from conftest import fake_attached

SHORT = ["--duration-s", "3", "--pattern-s", "1", "--high", "6", "--new-tokens", "8",
         "--probes", "8", "--probe-tokens", "8", "--odd-every-s", "0.1", "--vocab", "1000"]


def test_soak_counts_everything_and_writes_a_valid_result(tmp_path, capsys):
    plain, sut = fake_attached(), fake_attached("--speculative-algorithm", "EAGLE3", "--tp-size", "2")
    try:
        out = tmp_path / "2026-11-29-soak.json"
        rc = cli.main(["soak", "--plain", plain.url, "--sut", sut.url,
                       "--sut-pid", str(sut.proc.pid), "--out", str(out), *SHORT])
        res = json.loads(out.read_text())
    finally:
        plain.stop(5)
        sut.stop(5)
    assert schema.validate_obj(res) == []
    assert rc == 0, capsys.readouterr()
    assert res["requests"] > 10 and res["failed"] == 0
    assert set(res["patterns"]) == {"step", "bursty", "sawtooth"}
    odd = res["odd_requests"]
    assert all(c["sent"] >= 1 for c in odd.values())
    assert odd["top-p-tiny"]["http_errors"] == odd["top-p-tiny"]["sent"]  # the fake's 400
    assert odd["logprobs"]["completed"] == odd["logprobs"]["sent"]
    # every unusual request ran once, timed, before the load (first-use compiles are start-up)
    first = res["odd_first_use"]
    assert set(first) == set(odd) and all(v["seconds"] >= 0 for v in first.values())
    assert first["logprobs"]["result"] == "completed" and first["top-p-tiny"]["result"] == "http_error"
    assert res["probe_identical_to_plain"] is True
    # the probes also ran under every sawtooth pattern, mixed into the load, and matched
    under = res["probes_under_load"]
    assert len(under) == res["patterns"].count("sawtooth") >= 1
    assert all(p["pattern"] == "sawtooth" and p["prompts"] == 8 and p["failed"] == 0
               and p["identical"] for p in under)
    assert res["kv_used_start"] == res["kv_used_end"] == 0 and res["kv_free_end"] == 100000
    assert res["rss_mb_start"] > 0 and res["rss_mb_max"] >= res["rss_mb_start"]
    assert res["health_at_end"] == 200 and res["samples"]
    assert res["tp_size"] == 2  # as the server reports it (no --tp-size given here)


def test_soak_fails_when_outputs_differ_from_plain(tmp_path):
    plain, sut = fake_attached(), fake_attached("--fake-lossy")
    try:
        out = tmp_path / "soak.json"
        rc = cli.main(["soak", "--plain", plain.url, "--sut", sut.url, "--out", str(out),
                       *SHORT, "--duration-s", "1"])
    finally:
        plain.stop(5)
        sut.stop(5)
    res = json.loads(out.read_text())
    assert rc == 1 and res["probe_identical_to_plain"] is False
    assert res["probe_identical_at_start"] is False
    assert res["rss_mb_start"] is None  # no --sut-pid: memory not sampled


def test_soak_bad_input_is_one_line(capsys):
    assert cli.main(["soak", "--plain", "http://10.1.1.1:1", "--sut", "http://127.0.0.1:1",
                     "--vocab", "1000", "--out", "x.json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "loopback" in err
