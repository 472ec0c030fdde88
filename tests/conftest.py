import os

from hypothesis import settings

import cluster_envs  # noqa: F401  (registers every id)

# The default run draws the same hypothesis examples every time, so CI is reproducible; HYPOTHESIS_PROFILE=explore
# draws fresh ones (run it to hunt for new bugs, then pin what it finds with @example or a regression test).
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
