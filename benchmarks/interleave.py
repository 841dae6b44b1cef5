"""Arms interleaved on one server: `adaptive-spec-bench sweep --interleave off,on,policy`.

Why: one level of one run reads +-15-100% at 16-256 requests (the host's speed moves between
repeats, each server starts in its own state), so a 2% question about the policy's choice
needs many paired repeats, each a server start and a level per system. Here one adaptive-spec
server holds a closed loop of N requests for the whole level while its settings switch
between arms every few seconds (POST /adaptive_spec/config): drafting forced off, forced on
(k = max steps, EAGLE-3's choice) and the server's own policy. Every arm's windows sit between
the others' in time, so drift hits them alike, and a minute of load gives many pairs.

What it measures: the policy's choice against the static choices *on our server*. Forced off
costs what the plain server costs and forced on what EAGLE-3 costs within a few percent
(README), but that is measured by sweeps of separate servers, not here.

How: once every one of the level's first N requests has its first token, round r runs the
arms in the order rotated by r (each arm follows each other arm equally often over A rounds).
A window's first `settle_s` seconds (the switch's catch-up, the batch adjusting) are not
counted. One row per arm and round: `repeat` = round (numbered on across passes), so
`adaptive-spec-bench paired FILE --system adaptive-spec:goodput --of
adaptive-spec:forced-off,adaptive-spec:forced-on` pairs the policy's window with the forced
arms' windows of the same round. Switching the force keeps the policy and what it learned
(Controller.update_settings); it goes on observing the steps of the forced windows, so it
starts each of its windows knowing both static costs, which a server on its own would have to
probe for: its probes are still in its windows, their cost partly not.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Callable, List, Sequence, Tuple

from .loadgen import BenchError, RunError, now

CONFIG_PATH = "/adaptive_spec/config"
ARM_SETTINGS = {"policy": {"force": None}, "off": {"force": "off"}, "on": {"force": "on"}}
ARM_SYSTEMS = {"off": "adaptive-spec:forced-off", "on": "adaptive-spec:forced-on"}
MAX_ROUNDS = 200
READY_TIMEOUT_S = 60.0  # the closed loop's first N requests all streaming (a ramp takes 1-5 s)
NOTE = ("interleaved arms on one server (benchmarks/interleave.py): the policy's windows "
        "against drafting forced off / on in the same rounds; the policy keeps observing the "
        "forced windows' steps")


def parse_arms(text: str) -> List[str]:
    arms = [a.strip() for a in str(text).split(",") if a.strip()]
    bad = [a for a in arms if a not in ARM_SETTINGS]
    if bad:
        raise BenchError(f"unknown arm {bad[0]!r} (arms: {', '.join(ARM_SETTINGS)})")
    if len(set(arms)) != len(arms) or len(arms) < 2:
        raise BenchError("give two or three different arms, e.g. off,on,policy")
    return arms


def check_settings(arms: Sequence[str], systems: Sequence[str], window_s: float,
                   settle_s: float, rounds: int) -> None:
    """One line (BenchError) for what an interleaved sweep cannot run."""
    if len(systems) != 1 or not systems[0].startswith("adaptive-spec:") \
            or systems[0] in ARM_SYSTEMS.values() or systems[0] == "adaptive-spec:flapping":
        raise BenchError("--interleave measures one adaptive-spec server with a policy: give "
                         "exactly one system such as adaptive-spec:goodput")
    if not 0 <= settle_s < window_s <= 120:
        raise BenchError("--interleave-window-s must be in (settle, 120] and "
                         "--interleave-settle-s >= 0")
    if not 1 <= rounds <= MAX_ROUNDS:
        raise BenchError(f"--interleave-rounds must be in 1..{MAX_ROUNDS}")


def arm_system(arm: str, system: str) -> str:
    """The row's system name: the server's own for its policy, the forced variants' else."""
    return system if arm == "policy" else ARM_SYSTEMS[arm]


def rotation(arms: Sequence[str], rounds: int) -> List[Tuple[int, str]]:
    """(round, arm) in run order: round r starts with arm r mod A."""
    a = len(arms)
    return [(r, arm) for r in range(rounds) for arm in list(arms[r % a:]) + list(arms[:r % a])]


def planned_s(arms: Sequence[str], window_s: float, rounds: int) -> float:
    return len(arms) * window_s * rounds


@dataclass
class Window:
    arm: str
    round: int
    t0: float  # counted from here (the switch answered, plus the settle time)
    t1: float  # to the next switch


async def _switch(client, arm: str) -> None:
    code, body = await client.post_json(CONFIG_PATH, ARM_SETTINGS[arm])
    if code != 200:
        raise RunError(f"POST {CONFIG_PATH} {ARM_SETTINGS[arm]}: "
                       f"{'no answer' if code is None else f'HTTP {code}'} "
                       f"{(body or '').strip()[:200]}")


async def run_windows(client, arms: Sequence[str], rounds: int, window_s: float,
                      settle_s: float, ready: Callable[[], bool], stop: asyncio.Event,
                      ready_timeout_s: float = READY_TIMEOUT_S) -> List[Window]:
    """Switch the server through the arms while a closed loop runs; set `stop` when done (or
    failed) and leave the server on its policy. Windows shorter than half their counted span
    (a switch that answered late) are dropped."""
    windows: List[Window] = []
    try:
        deadline = now() + ready_timeout_s
        while not ready() and now() < deadline:
            await asyncio.sleep(0.05)
        if not ready():
            raise RunError(f"interleave: the level's requests were not all streaming after "
                           f"{ready_timeout_s:.0f} s")
        for r, arm in rotation(arms, rounds):
            t = now()
            await _switch(client, arm)
            w = Window(arm, r, now() + settle_s, t + window_s)
            if w.t1 - w.t0 >= 0.5 * (window_s - settle_s):
                windows.append(w)
            await asyncio.sleep(max(0.0, w.t1 - now()))
        return windows
    finally:
        stop.set()
        try:
            await _switch(client, "policy")
        except RunError:
            pass  # the error that ended the run (if any) says more; the level's end logs it
