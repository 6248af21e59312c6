"""The peer side shared by the PyTorch bench scripts: TorchScript built the strongest way
PyTorch offers for CPU inference, and the machine's measured sgemm peak that dense rows are
divided by (bench/sgemm_peak.c)."""
import os
import subprocess


def torchscript_inference(torch, module, example):
    """`module` traced on `example` (a tuple of inputs), frozen and optimised for inference."""
    module.eval()
    with torch.no_grad():
        traced = torch.jit.trace(module, example)
        return torch.jit.optimize_for_inference(torch.jit.freeze(traced))


def torchscript_training(torch, module, example):
    """`module` traced on `example` for training: parameters stay parameters (no freezing),
    so autograd and the optimiser work on the traced graph."""
    module.train()
    return torch.jit.trace(module, example)


def peak_gflops(source=None):
    """One-thread sgemm GFLOP/s from `source` or $OTC_SGEMM_PEAK: a file holding the number
    (`sgemm_peak --write FILE`) or the sgemm_peak program itself (run with --quick). None
    when neither is given or it cannot be read."""
    source = source or os.environ.get("OTC_SGEMM_PEAK")
    if not source:
        return None
    try:
        if os.access(source, os.X_OK) and not os.path.isdir(source):
            out = subprocess.run([source, "--quick"], capture_output=True, text=True,
                                 check=True).stdout
            line = next(ln for ln in out.splitlines() if "peak" in ln and "GFLOP/s" in ln)
            return float(line.split(":")[1].split()[0])
        with open(source) as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError, StopIteration, subprocess.CalledProcessError):
        return None


def gflops_text(flops, seconds, peak):
    """'12.3 GFLOP/s (25% of peak)' for `flops` done in `seconds`; no fraction without a peak."""
    g = flops / seconds * 1e-9
    return f"{g:.1f} GFLOP/s" + (f" ({100 * g / peak:.0f}% of peak)" if peak else "")
