"""The test layout cannot shadow a package: whatever runs the suite (the ``pytest`` console script, as the README
says, or ``python -m pytest``), ``import baselines`` inside a test is the package, not the folder
``tests/baselines``."""

from pathlib import Path

import pytest

import agents
import baselines
import cluster_envs

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize("package", [cluster_envs, agents, baselines], ids=lambda module: module.__name__)
def test_each_package_imported_in_the_run_is_the_package_itself(package):
    # A folder that shadows a package imports as a namespace package: no __file__, and a path under tests/.
    assert package.__file__ is not None, f"{package.__name__} is a namespace package: {list(package.__path__)}"
    path = Path(package.__file__).resolve()
    assert path.name == "__init__.py" and path.parent.name == package.__name__
    assert not path.is_relative_to(TESTS), f"{package.__name__} is imported from the test folder {path.parent}"


def test_every_test_folder_is_a_package():
    folders = {path.parent for path in TESTS.rglob("*.py")}
    assert [str(f.relative_to(TESTS)) for f in sorted(folders) if not (f / "__init__.py").is_file()] == []


def test_no_module_imports_another_for_a_side_effect():
    # An import kept only for what importing does (registering ids, patching) hides a dependency; a module that needs
    # the ids calls cluster_envs.register_envs() instead. A package's __init__ re-exports, which ruff's F401 allows.
    roots = [Path(package.__file__).parent for package in (cluster_envs, agents, baselines)]
    offenders = [
        f"{path}:{number}"
        for root in roots
        for path in sorted(root.rglob("*.py"))
        if path.name != "__init__.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "noqa: F401" in line
    ]
    assert offenders == []
