"""spmv_csr: y = A @ x for a sparse matrix A in CSR form (row_ptr, col_idx, values)."""

import numpy as np


def _row_lengths(rows: int, cols: int, nnz: int, rng: np.random.Generator) -> np.ndarray:
    """Uneven row lengths summing to exactly nnz, none above cols: log-normal weights (a few rows
    are 100x the average, like the hubs of a graph) and about 3% empty rows."""
    if not 1 <= nnz <= rows * cols:
        raise ValueError(f"need 1 <= nnz <= rows * cols, got nnz={nnz} for {rows} x {cols}")
    weight = rng.lognormal(0.0, 1.0, rows)
    weight[rng.random(rows) < 0.03] = 0.0
    if weight.sum() == 0.0:
        weight[:] = 1.0
    lengths = np.minimum(np.floor(weight / weight.sum() * nnz), cols).astype(np.int64)
    # Floors and the cap leave a remainder: hand it out one entry per row with room, preferring
    # rows that are meant to be non-empty.
    while (missing := nnz - int(lengths.sum())) > 0:
        room = np.flatnonzero((lengths < cols) & (weight > 0))
        if room.size == 0:
            room = np.flatnonzero(lengths < cols)
        lengths[rng.choice(room, size=min(missing, room.size), replace=False)] += 1
    return lengths


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    rows, cols, nnz = sizes["rows"], sizes["cols"], sizes["nnz"]
    lengths = _row_lengths(rows, cols, nnz, rng)
    row_ptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=row_ptr[1:])
    row_of = np.repeat(np.arange(rows), lengths)
    rank = np.arange(nnz) - row_ptr[row_of]  # position of each entry within its row
    # Each row's columns lie in a window around the diagonal whose width varies from a tight band
    # (contiguous columns) to the whole matrix (scattered columns).
    width = np.minimum(cols, np.ceil(lengths * (1.0 + rng.lognormal(1.0, 2.0, rows)))).astype(np.int64)
    width = np.maximum(width, lengths)
    centre = (np.arange(rows) * cols) // rows
    low = np.clip(centre - width // 2, 0, cols - width)
    # Sorted uniforms per row from normalised cumulative sums of exponential gaps; v = floor(u *
    # (width - L + 1)) is non-decreasing and below width - L + 1, so low + v + rank is strictly
    # increasing and inside [low, low + width): distinct, sorted column indices.
    gaps = rng.exponential(1.0, nnz)
    running = np.cumsum(gaps)
    before = np.concatenate([[0.0], running])[row_ptr[:-1]]
    total = np.concatenate([[0.0], running])[row_ptr[1:]] - before + rng.exponential(1.0, rows)
    u = (running - before[row_of]) / total[row_of]
    v = np.floor(u * (width - lengths + 1)[row_of]).astype(np.int64)
    col_idx = low[row_of] + v + rank
    return {
        "row_ptr": row_ptr.astype(np.int32),
        "col_idx": col_idx.astype(np.int32),
        "values": rng.standard_normal(nnz).astype(np.float32),
        "x": rng.uniform(-1.0, 1.0, cols).astype(np.float32),
    }


def _row_sums(terms: np.ndarray, row_ptr: np.ndarray) -> np.ndarray:
    """Sum the entries of each row (0 for an empty row), in terms' dtype."""
    starts = row_ptr[:-1].astype(np.int64)
    nonempty = starts < row_ptr[1:]
    y = np.zeros(starts.size, dtype=terms.dtype)
    if terms.size:
        # reduceat sums from each listed start to the next; the empty rows between two non-empty
        # ones own no entries, so listing only non-empty rows gives the right segments.
        y[nonempty] = np.add.reduceat(terms, starts[nonempty])
    return y


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    x = inputs["x"].astype(dtype)
    terms = inputs["values"].astype(dtype) * x[inputs["col_idx"]]
    return {"y": _row_sums(terms, inputs["row_ptr"])}


def error_scale(inputs: dict[str, np.ndarray], params: dict[str, int | float]) -> dict[str, np.ndarray]:
    # Per row, sum |a_ij| |x_j|: the condition of that row's dot product (0 for an empty row,
    # whose result must then be exactly 0).
    x = np.abs(inputs["x"].astype(np.float64))
    terms = np.abs(inputs["values"].astype(np.float64)) * x[inputs["col_idx"]]
    return {"y": _row_sums(terms, inputs["row_ptr"])}
