"""Hardware counters: what limits a kernel, read from the GPU's performance counters.

The Performance Profiler says how fast a kernel is; this package says why. One candidate's launch
plan runs once at the timing size in a short-lived process of its own (probe.py) under Nsight
Compute (`ncu`, runner.py), with clocks left alone and never inside a timed region, so nothing here
touches a latency figure. ncu's CSV (ncu_csv.py) becomes per-launch counters (model.py), and
derive.py turns those and the task's own figures into a few words a person and a model can act on:
DRAM traffic against the minimum the task must move, memory against compute throughput, achieved
against theoretical occupancy and what caps it, the top warp stalls, bank conflicts and coalescing.
Where counters cannot be read (no ncu, counters not permitted, a sandbox, a timeout) the report
carries one line saying so and why, and the session goes on without them.
"""
