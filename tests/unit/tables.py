"""Step-time tables filled with chosen cells, for the goodput policy's and the table's tests."""


def fill_cells(table, bs, cells):
    """cells: {k: (ms, samples)}, merged in one sync."""
    for k, (ms, n) in cells.items():
        for _ in range(n):
            table.record(bs, k, ms / 1000)
    table.sync(lambda v: v)


# The dense pair's final table in session 18's `p2` (dial 0.7; ms, samples): a plain step at
# 33-64 requests read 8.95 ms, at 65-128 requests 6.73 (clean runs read 5.9-6.1 at 33-64).
P2_DENSE_64 = {0: (8.948, 350), 1: (15.869, 13), 2: (18.471, 361), 3: (22.081, 733)}
P2_DENSE_128 = {0: (6.726, 1986), 1: (27.015, 18), 3: (30.813, 6)}

