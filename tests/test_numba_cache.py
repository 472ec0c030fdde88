"""The package-wide numba cache stamp (``cluster_envs.common.numba_cache``): a cached compiled function is
recompiled when any source file of its package or of ``cluster_envs`` changes, not only its own (a stale inlined
callee would run old code silently); packages built on ``cluster_envs`` register themselves, ``cluster_envs``
names none of them, and functions of other packages keep numba's rule."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from pathlib import Path

import numba
import pytest

import agents
import baselines
import cluster_envs
from cluster_envs.common import numba_cache


def _cached_dispatchers():
    for package in (cluster_envs, agents):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if isinstance(value, numba.core.registry.CPUDispatcher) and value._cache is not None:
                    if getattr(value._cache, "_impl", None) is not None and value.__module__ == module.__name__:
                        yield f"{module.__name__}.{name}", value


def test_every_cached_function_of_the_packages_is_stamped_with_its_trees():
    dispatchers = dict(_cached_dispatchers())
    assert len(dispatchers) > 20  # the settings' kernels, the PCG streams, the agents' kernels
    roots = {"cluster_envs": (numba_cache.ROOT,), "agents": (numba_cache.ROOT, Path(agents.__file__).parent)}
    assert any(name.startswith("agents.") for name in dispatchers)
    for name, dispatcher in dispatchers.items():
        locator = dispatcher._cache._impl._locator
        assert isinstance(locator, numba_cache._SourceTreeStamp), name
        expected = numba_cache.source_tree_stamp(roots[name.partition(".")[0]])
        assert locator.get_source_stamp() == expected, name


def test_the_env_layer_names_no_package_above_it():
    """``cluster_envs`` learns of ``agents`` and ``baselines`` only from their own registration."""
    source = Path(numba_cache.__file__).read_text()
    assert "agents" not in source and "baselines" not in source
    assert {Path(agents.__file__).parent, Path(baselines.__file__).parent} <= set(numba_cache.registered_roots())
    before = numba_cache.registered_roots()
    numba_cache.register_package(agents.__file__)  # again: nothing changes
    assert numba_cache.registered_roots() == before


def test_the_stamp_changes_with_any_file_of_the_tree(tmp_path):
    (tmp_path / "pkg_a").mkdir(), (tmp_path / "pkg_b").mkdir()
    caller, callee = tmp_path / "pkg_a" / "caller.py", tmp_path / "pkg_b" / "callee.py"
    caller.write_text("from pkg_b.callee import f\n")
    callee.write_text("def f(x):\n    return x + 1\n")
    roots = (tmp_path / "pkg_a", tmp_path / "pkg_b")
    before = numba_cache.source_tree_stamp.__wrapped__(roots)
    assert numba_cache.source_tree_stamp.__wrapped__(roots) == before  # deterministic
    callee.write_text("def f(x):\n    return x + 2\n")  # only the callee's file changes
    assert numba_cache.source_tree_stamp.__wrapped__(roots) != before
    callee.write_text("def f(x):\n    return x + 1\n")
    assert numba_cache.source_tree_stamp.__wrapped__(roots) == before
    callee.rename(tmp_path / "pkg_b" / "moved.py")
    assert numba_cache.source_tree_stamp.__wrapped__(roots) != before


def test_functions_of_other_packages_keep_numbas_own_locator(tmp_path, monkeypatch):
    (tmp_path / "elsewhere.py").write_text("import numba\n\n@numba.njit(cache=True)\ndef g(x):\n    return x\n")
    spec = importlib.util.spec_from_file_location("elsewhere", tmp_path / "elsewhere.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "elsewhere", module)
    spec.loader.exec_module(module)
    assert not isinstance(module.g._cache._impl._locator, numba_cache._SourceTreeStamp)


def test_installing_twice_adds_nothing():
    impl = getattr(numba.core.caching, "CacheImpl", None) or numba.core.caching._CacheImpl
    before = list(impl._locator_classes)
    numba_cache._install()
    assert impl._locator_classes == before


@pytest.mark.parametrize("root", numba_cache.registered_roots(), ids=lambda p: p.name)
def test_the_roots_are_the_installed_packages(root):
    assert (root / "__init__.py").is_file()
