"""The package-wide numba cache stamp (``cluster_envs.common.numba_cache.cached_njit``): a cached compiled function
is recompiled when any source file of its package or of ``cluster_envs`` changes, not only its own (a stale inlined
callee would run old code silently); packages built on ``cluster_envs`` register themselves, ``cluster_envs``
names none of them, numba itself is left unchanged and functions of other packages keep numba's rule."""

from __future__ import annotations

import ast
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


def test_numba_itself_is_unchanged():
    """The stamp is given to our dispatchers only: numba's own cache classes list numba's locators alone."""
    for impl in (numba.core.caching.CompileResultCacheImpl, numba.core.caching.CodeLibraryCacheImpl):
        assert not any(issubclass(cls, numba_cache._SourceTreeStamp) for cls in impl._locator_classes)
    assert numba.core.caching.FunctionCache._impl_class is numba.core.caching.CompileResultCacheImpl


def test_every_cached_function_of_ours_goes_through_cached_njit():
    """A ``cache=True`` in our packages would bring back numba's own-file rule, and with it the stale callee."""
    found = []
    for package in (cluster_envs, agents, baselines):
        for path in sorted(Path(package.__file__).parent.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.keyword) and node.arg == "cache":
                    found.append(f"{path.relative_to(Path(package.__file__).parents[1])}:{node.value.lineno}")
    assert found == []


def test_cached_njit_refuses_cache_and_functions_of_unregistered_packages(tmp_path, monkeypatch):
    with pytest.raises(TypeError, match="leave out cache="):
        numba_cache.cached_njit(cache=True)
    source = "from cluster_envs.common.numba_cache import cached_njit\n\n@cached_njit\ndef g(x):\n    return x\n"
    (tmp_path / "unregistered.py").write_text(source)
    spec = importlib.util.spec_from_file_location("unregistered", tmp_path / "unregistered.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "unregistered", module)
    with pytest.raises(ValueError, match=r"g is in .*unregistered\.py: call register_package\(__file__\)"):
        spec.loader.exec_module(module)


@pytest.mark.parametrize("root", numba_cache.registered_roots(), ids=lambda p: p.name)
def test_the_roots_are_the_installed_packages(root):
    assert (root / "__init__.py").is_file()
