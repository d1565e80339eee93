"""pipelines package."""

import os

# Steps run side by side in threads of `mi workers` (Celery's threads pool), each launching
# numba's parallel kernels. Numba's fallback layer (workqueue) aborts the process when two
# threads launch kernels at once; "threadsafe" takes OpenMP or TBB, and fails the first launch
# with a clear error where neither exists. Read by numba when it is first imported.
os.environ.setdefault("NUMBA_THREADING_LAYER", "threadsafe")
