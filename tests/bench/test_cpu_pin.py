"""The sweep's scheduler pin against real processes: test_cpu_usage's server-like tree, whose
child is titled as SGLang titles its scheduler, spins on its main thread and runs a second one."""
import asyncio
import json
import os
import subprocess
import sys
import time

import psutil
import pytest

from benchmarks.cpu_pin import SchedulerPin, parse_cpus
from benchmarks.cpu_usage import CorePlacement
from test_cpu_usage import TREE  # a scheduler-titled child with two threads


needs_two = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")


@pytest.fixture
def server_tree():
    pytest.importorskip("setproctitle")
    proc = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    mine = {t.id: os.sched_getaffinity(t.id) for t in psutil.Process().threads()}
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(1.0)  # the child has set its title and started its thread
        yield proc
    finally:
        for tid, cpus in mine.items():  # the pin moves this process too: give the suite its CPUs back
            try:
                os.sched_setaffinity(tid, cpus)
            except OSError:
                pass
        proc.kill()
        proc.wait(10)


def _affinities(pid):
    return {t.id: frozenset(os.sched_getaffinity(t.id)) for t in psutil.Process(pid).threads()}


@needs_two
def test_the_scheduler_gets_the_listed_cpu_and_everything_else_the_others(server_tree):
    allowed = sorted(os.sched_getaffinity(0))
    listed, rest = allowed[-1], set(allowed[:-1])
    got = SchedulerPin([listed]).pin(server_tree.pid)

    sched = psutil.Process(server_tree.pid).children()[0]
    assert got["scheduler_pin"]["main"] == [listed]
    assert set(_affinities(sched.pid).values()) == {frozenset({listed})}  # both of its threads
    assert len(_affinities(sched.pid)) == 2
    assert set(_affinities(server_tree.pid).values()) == {frozenset(rest)}
    assert set(_affinities(os.getpid()).values()) == {frozenset(rest)}

    async def level():  # what the row's placement then reads: the scheduler on the listed CPU
        place = CorePlacement(server_tree.pid, interval_s=0.05)
        place.start()
        await asyncio.sleep(0.5)
        return await place.stop()

    assert set(asyncio.run(level())["scheduler_cpus"]) == {str(listed)}


@needs_two
def test_with_two_cpus_listed_the_main_thread_takes_the_first_and_the_others_the_second(server_tree):
    first, second = sorted(os.sched_getaffinity(0))[-2:]
    # both listed (the CLI would leave one for the rest; the placement itself does not need it)
    SchedulerPin([first, second], allowed={first, second}).pin(server_tree.pid)
    sched = psutil.Process(server_tree.pid).children()[0]
    aff = _affinities(sched.pid)
    assert aff.pop(sched.pid) == {first}
    assert list(aff.values()) == [{second}]


def test_a_tree_without_a_scheduler_is_told_not_pinned():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(20)"])
    try:
        assert SchedulerPin([0], allowed={0, 1}).pin(proc.pid) == {"pin_error": "no scheduler process found"}
        assert os.sched_getaffinity(proc.pid) == os.sched_getaffinity(0)  # nothing moved
    finally:
        proc.kill()
        proc.wait(10)
    assert SchedulerPin([0], allowed={0, 1}).pin(None) == {}


@pytest.mark.parametrize("text,cpus", [("1", [1]), ("3,1", [1, 3]), ("1-3", [1, 2, 3]), (" 2, 2 ", [2])])
def test_cpu_lists_parse(text, cpus):
    assert parse_cpus(text, allowed=set(range(8))) == cpus


@pytest.mark.parametrize("text,says", [
    ("x", "expected CPU ids"), ("3-1", "bad range"), ("", "no CPU given"),
    ("9", "CPU 9 is not one this process may use (0,1,2,3)"),
    ("0-3", "leave at least one CPU"),
])
def test_bad_cpu_lists_are_named(text, says):
    with pytest.raises(ValueError, match=says.replace("(", r"\(").replace(")", r"\)")):
        parse_cpus(text, allowed={0, 1, 2, 3})


@needs_two
def test_a_pinned_sweep_runs_every_systems_scheduler_on_the_listed_cpu(tmp_path, fake_env, model_dirs):
    pytest.importorskip("setproctitle")
    from adaptive_spec.bench import cli, schema
    from test_bench_sweep_cli import FAST

    listed = sorted(os.sched_getaffinity(0))[-1]
    mine = {t.id: os.sched_getaffinity(t.id) for t in psutil.Process().threads()}
    t, d = model_dirs
    out = tmp_path / "pinned.json"
    try:
        rc = cli.main(["sweep", "--target", str(t), "--draft", str(d),
                       "--systems", "plain,adaptive-spec:threshold", "--concurrency", "2",
                       "--new-tokens", "8", "--prompt-len", "8", "--out", str(out),
                       "--log-dir", str(tmp_path / "logs"), "--no-plot",
                       "--server-arg=--fake-scheduler-child", "--server-arg=--fake-delay-s=0.01",
                       "--requests-per-level", "100",
                       "--pin-scheduler-cpus", str(listed), *FAST])
    finally:
        for tid, cpus in mine.items():
            try:
                os.sched_setaffinity(tid, cpus)
            except OSError:
                pass
    assert rc == 0 and schema.validate_file(out) == []
    rows = json.loads(out.read_text())["rows"]
    assert [r["system"] for r in rows] == ["plain", "adaptive-spec:threshold"]
    for r in rows:  # told, and seen there through the level: a sleeping process moves when it
        # next wakes, so the placement's first sample, taken right after the pin, may read the old CPU
        assert r["scheduler_pin"]["main"] == [listed] and r["scheduler_pin"]["threads"] >= 1
        seen = r["scheduler_cpus"]
        assert sum(seen.values()) >= 3 and seen.get(str(listed), 0) >= sum(seen.values()) - 1, seen
