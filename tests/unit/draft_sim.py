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
