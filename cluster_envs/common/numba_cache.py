"""Numba's on-disk cache, invalidated by any change to the package's sources, not only the function's own file.

Numba keys a cached function on its own source file, but the cached machine code also contains every compiled
function it calls, which often live in other files (the PCG64 streams of ``common/pcg.py`` inside each setting's
step, for example). After a ``git pull`` that changes only a callee's file, numba would load the stale caller
and run the old code without a word (a documented numba limitation). Here every function of ``cluster_envs`` is
stamped instead with a hash of all of its Python sources, so any change recompiles them. A package built on
``cluster_envs`` whose compiled functions may call ours registers its own directory with
:func:`register_package` from its ``__init__``, before it decorates any cached function; its functions are then
stamped with a hash of its sources and ours. Functions of other packages keep numba's own rule.
Imported first by ``cluster_envs/__init__``, before any cached function is decorated.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
from pathlib import Path

from numba.core import caching

ROOT = Path(__file__).resolve().parents[1]  # the cluster_envs package
_registered: list[Path] = [ROOT]


@functools.cache
def source_tree_stamp(roots: tuple[Path, ...] = (ROOT,)) -> str:
    """SHA-256 over the relative path and contents of every ``.py`` file below ``roots``, in a fixed order."""
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root.parent)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def register_package(init_file: str | Path) -> None:
    """Stamp the cached compiled functions of the package whose ``__init__.py`` is ``init_file`` with the hash of
    its sources and of ``cluster_envs``' (call it from that ``__init__``, before any cached function is
    decorated; calling it again changes nothing)."""
    root = Path(init_file).resolve().parent
    if root not in _registered:
        _registered.append(root)


def registered_roots() -> tuple[Path, ...]:
    """``cluster_envs`` and every package registered since, in registration order."""
    return tuple(_registered)


def _stamp_roots(py_file: str) -> tuple[Path, ...] | None:
    """The source trees whose hash stamps a function defined in ``py_file``: ``cluster_envs`` alone for its own
    functions, ``cluster_envs`` and the registered package for that package's, None outside them."""
    path = Path(py_file).resolve()
    for root in reversed(_registered):  # a registered package could lie inside another: the innermost wins
        if path.is_relative_to(root):
            return (ROOT,) if root == ROOT else (ROOT, root)
    return None


class _SourceTreeStamp:
    """Mixin for numba's file-backed cache locators: claim only the registered packages' functions and stamp them
    with :func:`source_tree_stamp` of their trees."""

    @classmethod
    def from_function(cls, py_func, py_file):
        roots = _stamp_roots(py_file)
        if roots is None:
            return None
        locator = super().from_function(py_func, py_file)
        if locator is not None:
            locator.stamp_roots = roots
        return locator

    def get_source_stamp(self):
        roots = getattr(self, "stamp_roots", None) or _stamp_roots(self._py_file)  # None while numba constructs it
        return source_tree_stamp(roots)

    def get_cache_path(self):
        # One folder per source tree: numba unpickles an index before it compares the stamp, so an index written by
        # other sources (one that names a record type since renamed, say) must never be read.
        return os.path.join(super().get_cache_path(), f"tree-{self.get_source_stamp()[:16]}")

    def ensure_cache_path(self):
        path = self.get_cache_path()
        if not os.path.isdir(path):  # a new source tree: the folders of the earlier ones are stale
            parent = os.path.dirname(path)
            for name in os.listdir(parent) if os.path.isdir(parent) else ():
                if name.startswith("tree-"):
                    shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
        super().ensure_cache_path()


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
