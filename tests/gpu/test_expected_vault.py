"""The vault that keeps the expected values on the GPU (engine/gpu/expected_vault.py): a kernel can read
what the vault holds only while it is lent to a comparison, and a comparison whose expected values
come from the vault reaches the same verdict as one that uploads them."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from cuda_llm.engine.gpu.device_compare import compare_on_device
from cuda_llm.engine.gpu.expected_vault import ExpectedVault
from cuda_llm.engine.task.model import BufferSpec, Tolerance

pytestmark = pytest.mark.gpu

# In a process of its own: the fault it provokes leaves its context unusable.
PEEK = textwrap.dedent(
    """
    import numpy as np
    from cuda_llm.engine.compile.nvrtc import compile_in_process
    from cuda_llm.engine.gpu.driver import Context, CudaError, pack_params
    from cuda_llm.engine.gpu.expected_vault import ExpectedVault

    ctx = Context(0)
    arch = f"sm_{ctx.attribute('COMPUTE_CAPABILITY_MAJOR')}{ctx.attribute('COMPUTE_CAPABILITY_MINOR')}"
    source = 'extern "C" __global__ void peek(const double* p, double* out) { out[0] = p[0]; }'
    peek = ctx.function(ctx.load_module(compile_in_process(source, arch).cubin), "peek")
    out = ctx.alloc(8)

    def read(ptr):
        ctx.launch(peek, (1, 1, 1), (1, 1, 1), 0, pack_params([("ptr", ptr), ("ptr", out.ptr)]))
        got = np.zeros(1)
        ctx.download(out, got, 10.0)
        return got[0]

    vault = ExpectedVault.open(ctx, 2**30)
    values = np.full(1024, 1234.5)
    values.setflags(write=False)
    handle, buf = vault.lend(values, values)
    print("lent", read(buf.ptr), buf.nbytes, flush=True)
    vault.give_back(handle)
    try:
        print("given back", read(buf.ptr), flush=True)
    except CudaError as exc:
        print("given back fault", exc.name, flush=True)
    """
)


def test_a_kernel_cannot_read_the_vault_but_while_a_comparison_does(gpu):
    done = subprocess.run([sys.executable, "-c", PEEK], capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert lines[:1] == ["lent 1234.5 8192"], done.stdout + done.stderr
    assert len(lines) == 2 and lines[1].startswith("given back fault CUDA_ERROR_"), done.stdout + done.stderr


@pytest.mark.parametrize("tol", [Tolerance("abs", 1e-6, 1e-12), Tolerance("custom", 1e-5, 1e-30)])
def test_a_comparison_from_the_vault_agrees_with_an_upload(harness, tol):
    """Every element counted alike either way, for an output of several million elements with a tail,
    and the vault puts each array there once however many comparisons use it."""
    ctx = harness.ctx
    vault = ExpectedVault.open(ctx, 2**30)
    assert vault is not None, "the driver refused a second context on this GPU"
    n = (3 << 20) + 5
    rng = np.random.default_rng(7)
    expected = rng.standard_normal(n)
    scale = np.abs(rng.standard_normal(n)) + 1.0
    for arr in (expected, scale):
        arr.setflags(write=False)
    host = expected.astype(np.float32)
    wrong_at = np.unique(np.append(rng.choice(n, size=1000, replace=False), n - 1))  # the tail's last too
    host[wrong_at] += 1.0
    spec = BufferSpec("c", "float32", (str(n),), "output")
    got = ctx.alloc(host.nbytes)
    try:
        ctx.upload(got, host)
        counts = [
            compare_on_device(ctx, harness, got, spec, expected, scale, tol, 0.0, 10.0, v)[0]
            for v in (None, vault, vault)
        ]
    finally:
        ctx.free(got)
    assert counts == [wrong_at.size] * 3
    assert vault.uploads == (2 if tol.scale == "custom" else 1)


def test_a_vault_with_room_for_one_copy_keeps_every_comparison_right(harness):
    """Each array pushes the other out (wiped, its memory given back) and is put there again when it
    comes back: the counts stay those of an upload."""
    ctx = harness.ctx
    n = (1 << 20) + 3
    rng = np.random.default_rng(11)
    arrays = [rng.standard_normal(n), rng.standard_normal(n)]
    for arr in arrays:
        arr.setflags(write=False)
    vault = ExpectedVault.open(ctx, arrays[0].nbytes)
    assert vault is not None, "no vault on this GPU (the driver has no virtual memory management)"
    tol = Tolerance("abs", 1e-6, 1e-12)
    spec = BufferSpec("c", "float32", (str(n),), "output")
    got = ctx.alloc(n * 4)
    try:
        ctx.upload(got, arrays[0].astype(np.float32))
        counts = [
            compare_on_device(ctx, harness, got, spec, arrays[i], None, tol, 0.0, 10.0, vault)[0] for i in (0, 1, 0, 1)
        ]
        uploaded = compare_on_device(ctx, harness, got, spec, arrays[1], None, tol, 0.0, 10.0)[0]
    finally:
        ctx.free(got)
    assert counts == [0, uploaded, 0, uploaded] and uploaded > n // 2
    assert vault.uploads == 4 and vault.held_bytes == arrays[0].nbytes
