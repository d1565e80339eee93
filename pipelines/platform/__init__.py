"""What every domain of the pipeline stands on, knowing none of them: settings and the operator's
files, the run's options and days, the executors, outbound HTTP and its retries, worker
processes, the numba kernels' array conventions and how a check shows its rows."""
