"""BLAS threads for the fit's dense algebra: one thread for the small matrices of a fit
(a few hundred columns), where threads cost more than they give on a loaded machine.

The OpenBLAS libraries already loaded by NumPy and SciPy are found in ``/proc/self/maps``
(Linux) and asked directly (``openblas_set_num_threads``); elsewhere the environment's setting
stays in force.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Callable, Iterator

__all__ = ["blas_threads"]

#: Matrices with fewer columns than this are factored on one thread.
ONE_THREAD_BELOW = 2000
_SETTERS = (
    ("openblas_set_num_threads", "openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
)


def _openblas_controls() -> list[tuple[Callable[[int], None], Callable[[], int]]]:
    """Setter and getter of each loaded OpenBLAS (Linux; empty elsewhere)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
    except OSError:
        return []
    out = []
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for set_name, get_name in _SETTERS:
            if hasattr(lib, set_name) and hasattr(lib, get_name):
                setter, getter = getattr(lib, set_name), getattr(lib, get_name)
                setter.argtypes, getter.restype = [ctypes.c_int], ctypes.c_int
                out.append((setter, getter))
                break
    return out


@contextlib.contextmanager
def blas_threads(columns: int) -> Iterator[str]:
    """Limit BLAS to one thread inside the block for dense problems of fewer than
    :data:`ONE_THREAD_BELOW` ``columns`` (else to at most four); yields what is in force, in
    words."""
    n = 1 if columns < ONE_THREAD_BELOW else max(1, min(os.cpu_count() or 1, 4))
    controls = _openblas_controls()
    if not controls:
        env = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
        yield f"BLAS threads left to the environment ({env or 'library default'}); wanted {n}"
        return
    old = [get() for _, get in controls]
    for set_, _ in controls:
        set_(n)
    try:
        yield f"{n} BLAS thread(s) for {columns} columns (OpenBLAS, {len(controls)} copies)"
    finally:
        for (set_, _), value in zip(controls, old, strict=True):
            set_(value)
