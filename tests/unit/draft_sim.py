"""Simulated verify results for the policy tests (no GPU, no model)."""


def correct_drafts(rng, n: int, p: float, steps: int) -> list:
    """Correct drafts of n requests in one round of `steps` drafts, draft j+1 right with chance
    p given draft j was (SGLang's per-request accepted-draft counts)."""
    out = []
    for _ in range(n):
        c = 0
        while c < steps and rng.random() < p:
            c += 1
        out.append(c)
    return out


def run_rank(ctl, loads, step_s, skew: float = 1.0, accept: float = 0.8, time_seed: int = 100) -> list:
    """Drive a goodput Controller as one tensor-parallel rank: one decision per batch size in
    `loads`, the previous step's verify result and measured time fed back after it (as under the
    overlap scheduler). The acceptance draws are the same on every rank; the step times,
    `step_s(bs, k)` x `skew` with +-5% noise seeded by `time_seed`, are the rank's own.
    Returns the chosen k per decision."""
    import random

    acc_rng, time_rng = random.Random(7), random.Random(time_seed)
    ctl.timer.tick = lambda steps, now=None: None  # step times come from step_s alone
    chosen, pending = [], None
    for bs in loads:
        k = ctl.decide(bs).steps
        chosen.append(k)
        if pending:  # the previous step's result, attributed to the batch that ran it
            ran_k, correct, seconds, ran_bs = pending
            ctl.on_result(ran_k, correct)
            ctl.policy.observe_step_time(ran_bs, ran_k, seconds)
        correct = correct_drafts(acc_rng, bs, accept, k)
        pending = (k, correct, skew * step_s(bs, k) * (1 + time_rng.uniform(-0.05, 0.05)), bs)
    return chosen


def on_threads(ranks: int, run, timeout_s: float = 120.0) -> None:
    """run(r) for r in range(ranks), each on its own thread (simulated TP ranks meeting in a
    reducer), joined within `timeout_s` each."""
    import threading

    threads = [threading.Thread(target=run, args=(r,)) for r in range(ranks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout_s)
