import csv
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import settings

import cluster_envs  # noqa: F401  (registers every id)

# The default run draws the same hypothesis examples every time, so CI is reproducible; HYPOTHESIS_PROFILE=explore
# draws fresh ones (run it to hunt for new bugs, then pin what it finds with @example or a regression test).
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# The Alibaba GPU 2023 trace is never vendored: the trace-preset tests read it from $CLUSTER_ENVS_ALIBABA_GPU_2023,
# else ../shared/traces/alibaba-gpu-v2023 beside the repository, and skip with a reason when neither holds it.
ALIBABA_GPU_2023_DIRS = (
    os.environ.get("CLUSTER_ENVS_ALIBABA_GPU_2023"),
    Path(__file__).resolve().parents[1] / ".." / "shared" / "traces" / "alibaba-gpu-v2023",
)


@pytest.fixture(scope="session")
def alibaba_trace_dir() -> Path:
    """The folder with the Alibaba GPU 2023 CSVs (see ``ALIBABA_GPU_2023_DIRS``), or a skip."""
    from cluster_envs.common.alibaba_gpu import NODE_FILE, POD_FILE

    for folder in filter(None, ALIBABA_GPU_2023_DIRS):
        if (Path(folder) / NODE_FILE).is_file() and (Path(folder) / POD_FILE).is_file():
            return Path(folder).resolve()
    pytest.skip(f"the Alibaba GPU 2023 trace ({NODE_FILE}, {POD_FILE}) is in none of {ALIBABA_GPU_2023_DIRS}")


# The Azure LLM inference 2023 trace (CC-BY 4.0), likewise never vendored: $CLUSTER_ENVS_AZURE_LLM_2023, else
# ../shared/traces/azure-llm-inference-2023 beside the repository; a skip with a reason when neither holds it.
AZURE_LLM_2023_DIRS = (
    os.environ.get("CLUSTER_ENVS_AZURE_LLM_2023"),
    Path(__file__).resolve().parents[1] / ".." / "shared" / "traces" / "azure-llm-inference-2023",
)


@pytest.fixture(scope="session")
def azure_trace_dir() -> Path:
    """The folder with the Azure LLM inference 2023 CSVs (see ``AZURE_LLM_2023_DIRS``), or a skip."""
    from cluster_envs.common.azure_llm import FILES

    for folder in filter(None, AZURE_LLM_2023_DIRS):
        if all((Path(folder) / name).is_file() for name in FILES.values()):
            return Path(folder).resolve()
    pytest.skip(f"the Azure LLM inference 2023 trace ({', '.join(FILES.values())}) is in none of {AZURE_LLM_2023_DIRS}")


@pytest.fixture
def malformed_trace(alibaba_trace_dir, tmp_path):
    """``make(file, drop_column=None)``: a copy of the trace in ``tmp_path`` without ``file`` (``drop_column``
    None) or with ``file``'s column ``drop_column`` removed; returns the folder."""
    from cluster_envs.common.alibaba_gpu import NODE_FILE, POD_FILE

    def make(file: str, drop_column: str | None = None) -> Path:
        for name in (NODE_FILE, POD_FILE):
            if name != file:
                shutil.copy(alibaba_trace_dir / name, tmp_path / name)
        if drop_column is not None:
            with open(alibaba_trace_dir / file, newline="") as source, open(tmp_path / file, "w", newline="") as out:
                rows = list(csv.reader(source))
                keep = [i for i, column in enumerate(rows[0]) if column != drop_column]
                csv.writer(out).writerows([row[i] for i in keep] for row in rows)
        return tmp_path

    return make
