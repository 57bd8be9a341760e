"""Profile tasks' baselines N times each on GPU 0 and print how each profile's sampling stopped.

    python3 stopexp.py matrix_transpose,layernorm 5
"""

import asyncio
import sys
import time

from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.fsr.judging import open_environment
from cuda_llm.engine.judge.judgement import Candidate
from cuda_llm.engine.task import TaskLibrary


async def main(names: list[str], times: int) -> None:
    s = Settings()
    env = await open_environment(s, gpus="0")
    lib = TaskLibrary()
    try:
        for name in names:
            task = lib.get(name)
            judge = env.judge(task, s)
            medians = []
            for i in range(times):
                t0 = time.perf_counter()
                cand = Candidate("b", task.baseline_source, task.baseline_plan, origin="user")
                t = (await judge.judge(cand, profile=True)).timing
                medians.append(t.median_us)
                where = " ".join(f"{m:.1f}" for m in t.placement_medians_us)
                print(
                    f"{name} #{i}: {t.median_us:.1f} us, {t.samples} samples, pooled IQR {t.rel_iqr:.2%}, "
                    f"within {t.placement_spread:.2%}, placements [{where}], levels {len(t.levels)}, "
                    f"{time.perf_counter() - t0:.2f} s",
                    flush=True,
                )
            print(f"{name}: medians spread {(max(medians) - min(medians)) / min(medians):.2%}", flush=True)
    finally:
        await env.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1].split(","), int(sys.argv[2])))
