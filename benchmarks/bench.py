"""Step-rate benchmark without the CLI: ``python benchmarks/bench.py [--ids ...] [--out DIR]``.

Same options and output as ``cluster-envs bench`` (see ``baselines/bench.py``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a fresh clone without installing

from baselines.bench import add_arguments, run_from_args  # noqa: E402

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(parser)
    run_from_args(parser.parse_args())
