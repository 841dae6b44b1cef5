"""What every policy returns, and the forced patterns used by benchmarks and tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Protocol

from ..signals import AcceptanceStats, LoadSnapshot

# Why a decision was made; also the Prometheus label values.
REASONS = (
    "idle",  # light load, drafting pays
    "threshold",  # running batch at/above the threshold
    "queue",  # requests waiting at/above the queue threshold
    "acceptance",  # measured accept length below the floor
    "reprobe",  # short drafting window to re-measure acceptance
    "cost_model",  # goodput policy's choice
    "probe",  # goodput policy measuring a step count (a catch-up step, then a cell's samples)
    "refresh",  # goodput policy re-measuring a filled cell (k=0 or a neighbour of the chosen k)
    "slo",  # goodput policy meeting a TPOT target
    "forced",  # --adaptive-spec-force
    "fallback",  # a hook or the policy failed; static behaviour for the rest of the run
)


@dataclass(frozen=True)
class Decision:
    steps: int
    reason: str


class Policy(Protocol):
    max_steps: int

    def decide(self, snap: LoadSnapshot, acc: AcceptanceStats) -> Decision: ...

    # optional: the steps `decide` would choose at this load, probes left out, changing
    # nothing (Controller.prefill_may_run_plain)
    def forecast(self, snap: LoadSnapshot, acc: AcceptanceStats) -> int: ...


class ForcedPolicy:
    """Holds drafting off, on, or alternates every `period` decode steps (benchmarks, tests, an
    operator's override). `inner`: the configured policy underneath; it makes no decision while
    forced but keeps observing the steps (its `observe_*`, `describe` and the like are reached
    through this object), so lifting the force at run time resumes it with what it learned
    (`Controller.update_settings`), and its status stays readable meanwhile."""

    def __init__(self, mode: str, period: int, max_steps: int, inner=None):
        self.mode, self.period, self.max_steps = mode, period, max_steps
        self.inner = inner
        self._step = 0

    def __getattr__(self, name: str):
        # only reached for what this class lacks: the inner policy's observers and views
        inner = self.__dict__.get("inner")
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)

    def decision_basis(self) -> str:
        """Nothing for the decision log: the inner policy's last basis predates the force."""
        return ""

    def forecast(self, snap: LoadSnapshot, acc: AcceptanceStats) -> int:
        """Off when forced off; otherwise the drafting count (flapping: the next switch is
        never known to be off for long)."""
        return 0 if self.mode == "off" else self.max_steps

    def decide(self, snap: LoadSnapshot, acc: AcceptanceStats) -> Decision:
        if self.mode == "off":
            return Decision(0, "forced")
        if self.mode == "on":
            return Decision(self.max_steps, "forced")
        on = (self._step // self.period) % 2 == 0
        self._step += 1
        return Decision(self.max_steps if on else 0, "forced")


def make_policy(cfg, reducer=None, keep=None) -> Policy:
    """The policy a config asks for (cfg: AdaptiveSpecConfig; reducer: TP all-reduce mean).
    A forced pattern overlays the configured policy; `keep`: an existing configured policy
    to overlay or return instead of a new one (its settings unchanged: the caller checks)."""
    inner = keep if keep is not None else _configured_policy(cfg, reducer)
    forced: Optional[tuple] = cfg.forced_pattern()
    if forced is not None:
        return ForcedPolicy(forced[0], forced[1], cfg.max_steps, inner=inner)
    return inner


def configured_policy(policy):
    """The policy underneath a forced overlay (or the policy itself)."""
    return policy.inner if isinstance(policy, ForcedPolicy) else policy


def _configured_policy(cfg, reducer):
    if cfg.policy == "threshold":
        from .threshold import ThresholdPolicy

        return ThresholdPolicy(cfg)
    from .goodput import GoodputPolicy

    return GoodputPolicy(cfg, reducer=reducer)
