"""Numba's on-disk cache, invalidated by any change to the package's sources, not only the function's own file.

Numba keys a cached function on its own source file, but the cached machine code also contains every compiled
function it calls, which often live in other files (the PCG64 streams of ``common/pcg.py`` inside each setting's
step, for example). After a ``git pull`` that changes only a callee's file, numba would load the stale caller
and run the old code without a word (a documented numba limitation). Here every function of ``cluster_envs``,
``agents`` and ``baselines`` is stamped instead with a hash of all the Python sources of those packages, so any
change recompiles them; functions of other packages keep numba's own rule. Imported first by each package's
``__init__``, before any cached function is decorated.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from numba.core import caching

PACKAGE_ROOTS = tuple(Path(__file__).resolve().parents[2] / name for name in ("cluster_envs", "agents", "baselines"))


@functools.cache
def source_tree_stamp(roots: tuple[Path, ...] = PACKAGE_ROOTS) -> str:
    """SHA-256 over the relative path and contents of every ``.py`` file below ``roots``, in a fixed order."""
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root.parent)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


class _SourceTreeStamp:
    """Mixin for numba's file-backed cache locators: claim only our packages' functions and stamp them with
    :func:`source_tree_stamp`."""

    @classmethod
    def from_function(cls, py_func, py_file):
        if not any(Path(py_file).resolve().is_relative_to(root) for root in PACKAGE_ROOTS):
            return None
        return super().from_function(py_func, py_file)

    def get_source_stamp(self):
        return source_tree_stamp()


def _install() -> None:
    # numba internals (CacheImpl was _CacheImpl in older numba)
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    locators = impl._locator_classes
    if any(issubclass(cls, _SourceTreeStamp) for cls in locators):
        return
    # The same places numba would choose (NUMBA_CACHE_DIR, the package's __pycache__, the user-wide cache), tried
    # first and in numba's order.
    file_backed = [cls for cls in locators if issubclass(cls, caching._SourceFileBackedLocatorMixin)]
    locators[:0] = [type(f"SourceTree{cls.__name__}", (_SourceTreeStamp, cls), {}) for cls in file_backed]


_install()
