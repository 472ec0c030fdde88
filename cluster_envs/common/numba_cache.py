"""``cached_njit``: numba's on-disk cache, invalidated by any change to the package's sources, not only the
function's own file.

Numba's ``cache=True`` keys a cached function on its own source file, but the cached machine code also contains
every compiled function it calls, which often live in other files (the PCG64 streams of ``common/pcg.py`` inside
each setting's step, for example). After a ``git pull`` that changes only a callee's file, numba would load the
stale caller and run the old code without a word (a documented numba limitation). A function decorated with
``cached_njit`` instead is stamped with a hash of all of its package's Python sources, so any change recompiles it.
It is numba's own cache (``FunctionCache``, its locators, in its order) with that stamp, given to this dispatcher
alone: numba itself is not changed, and ``cache=True`` elsewhere keeps numba's rule.

A package built on ``cluster_envs`` whose compiled functions may call ours registers its own directory with
:func:`register_package` from its ``__init__``, before it decorates any function with ``cached_njit``; its
functions are then stamped with a hash of its sources and ours.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
from pathlib import Path

import numba
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


class _SourceTreeCacheImpl(caching.CompileResultCacheImpl):
    # numba's file-backed locators (NUMBA_CACHE_DIR, the package's __pycache__, the user-wide cache), in numba's order
    _locator_classes = [
        type(f"SourceTree{cls.__name__}", (_SourceTreeStamp, cls), {})
        for cls in caching.CompileResultCacheImpl._locator_classes
        if issubclass(cls, caching._SourceFileBackedLocatorMixin)
    ]


class SourceTreeCache(caching.FunctionCache):
    """numba's on-disk function cache, stamped with the source trees of the function's package."""

    _impl_class = _SourceTreeCacheImpl


def cached_njit(function=None, /, **options):
    """``numba.njit(**options)`` with an on-disk cache stamped with the hash of the sources of the function's package
    and of ``cluster_envs``: ``@cached_njit`` or ``@cached_njit(inline="always")``. Only for functions of
    ``cluster_envs`` and of packages registered with :func:`register_package`."""
    if "cache" in options:
        raise TypeError("cached_njit always caches: leave out cache=")

    def decorate(function):
        if _stamp_roots(function.__code__.co_filename) is None:
            raise ValueError(f"cached_njit caches functions of {[r.name for r in _registered]}; "
                             f"{function.__qualname__} is in {function.__code__.co_filename}: call "
                             "register_package(__file__) from its package's __init__ first")  # fmt: skip
        dispatcher = numba.njit(**options)(function)
        dispatcher._cache = SourceTreeCache(dispatcher.py_func)  # Dispatcher.enable_caching, with this cache class
        return dispatcher

    return decorate if function is None else decorate(function)
