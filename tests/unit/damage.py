"""Random damage to parsed JSON (a status, a result file): one value somewhere deleted or
replaced by one of the wrong type, as a server of another version or a hand edit could leave.
Readers of such documents must say what is wrong, not raise."""

ODD = (None, 0, -1, 1e308, float("nan"), "", "x", [], {}, True, [1, 2], {"a": 1})


def damage(rng, node, depth: int = 0) -> None:
    """Delete or replace one value in `node` (in place), or go one level deeper."""
    if not isinstance(node, (dict, list)) or not node:
        return
    key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
    roll = rng.random()
    if roll < 0.3:
        del node[key]
    elif roll < 0.6 or depth > 6:
        node[key] = rng.choice(ODD)
    else:
        damage(rng, node[key], depth + 1)
