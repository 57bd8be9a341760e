"""Profile tasks' baselines 5 times each on GPU 0 and print how each profile's sampling stopped."""
import asyncio, sys, time
sys.path.insert(0, "tests")
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.fsr.judging import open_environment
from cuda_llm.engine.judge.judgement import Candidate
from cuda_llm.engine.task import TaskLibrary

async def main():
    s = Settings()
    env = await open_environment(s, gpus="0")
    lib = TaskLibrary()
    try:
        for name in sys.argv[1].split(","):
            task = lib.get(name)
            j = env.judge(task, s)
            meds = []
            for i in range(int(sys.argv[2])):
                t0 = time.perf_counter()
                r = await j.judge(Candidate("b", task.baseline_source, task.baseline_plan, origin="user"), profile=True)
                t = r.timing
                meds.append(t.median_us)
                pm = " ".join(f"{m:.1f}" for m in t.placement_medians_us)
                print(f"{name} #{i}: {t.median_us:.1f} us, {t.samples} samples, pooled IQR {t.rel_iqr:.2%}, within {t.placement_spread:.2%}, placements [{pm}], levels {len(t.levels)}, {time.perf_counter()-t0:.2f} s", flush=True)
            print(f"{name}: medians spread {(max(meds)-min(meds))/min(meds):.2%}", flush=True)
    finally:
        await env.close()

if __name__ == "__main__":
    asyncio.run(main())
