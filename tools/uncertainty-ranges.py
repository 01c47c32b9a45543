#!/usr/bin/python3
"""Half-widths of the calibration constants' ranges (docs/uncertainty.md "Ranges").

For each constant, the public step-time runs are evaluated at the constant's value moved by a
small step either way (ppsearch-validate --set), which gives each run's elasticity
    s_i = d ln(predicted step time_i) / d ln(constant)     (relative constants)
    s_i = d ln(predicted step time_i) / d constant         (absolute constants: the overlaps)
Only the runs with split = fit (the rows the constants are fitted on) are used. The residual of
each run at the shipped constants is r_i = ln(predicted_i / measured_i). If the
whole residual of run i were this constant's doing, the constant would have to move by
-r_i / s_i; the half-width printed is the spread of those moves,
    w = sigma * sqrt(n / sum s_i^2),   sigma = 1.4826 * median |r_i|,
i.e. the residual spread expressed in the constant. sigma is a robust scale (the standard
deviation for normal residuals) so that the few runs with a mechanism the model lacks
(docs/validation.md) do not set it alone. A constant the runs hardly move
(sum s_i^2 small) gets a large w and is capped at the prior given below.

Usage (from the repository root, after building):
    /usr/bin/python3 tools/uncertainty-ranges.py [build/ci/bin/ppsearch-validate] [RUNS.csv]
Prints one line per constant: key, half-width, relative/absolute, runs used, capped or not.
Needs h5py (Debian's /usr/bin/python3 has it).
"""
import math
import statistics
import os
import subprocess
import sys
import tempfile

import h5py

VALIDATE = sys.argv[1] if len(sys.argv) > 1 else "build/ci/bin/ppsearch-validate"
RUNS = sys.argv[2] if len(sys.argv) > 2 else "tests/validation/runs-public.csv"

# key, relative?, the point the step is taken around (the H100/H200 preset value, or the
# overlap's shipped value), the step, and the prior that caps a constant the runs hardly move
# (the spread of the measurements its preset comment cites; docs/uncertainty.md "Ranges").
CONSTANTS = [
    ("gpu.gemm_efficiency", True, 0.68, 0.02, 0.30),
    ("gpu.attention_efficiency", True, 0.468, 0.02, 0.25),
    ("gpu.memory_efficiency", True, 0.62, 0.02, 0.12),
    ("cluster.nvlink_efficiency", True, 0.82, 0.02, 0.10),
    ("cluster.network_efficiency", True, 0.90, 0.02, 0.10),
    ("cluster.tp_comm_overlap", False, 0.0, 0.05, 0.20),
    ("gpu.comm_contention", False, 0.25, 0.02, 0.07),
    ("cluster.step_jitter", False, 0.003, 0.002, 0.003),
    ("gpu.kernel_overhead_us", True, 3.0, 0.1, 0.5),
    ("training.step_overhead_s", True, 0.02, 0.1, 1.0),
    ("gpu.attention_tile_blocks", True, 2.47, 0.05, 0.45),
]


def run(tmp, name, sets):
    out = os.path.join(tmp, name + ".h5")
    cmd = [VALIDATE, RUNS, "--output", out, "--overwrite", "--quiet"]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True)
    with h5py.File(out, "r") as f:
        rows = f["runs"][...]
    return {r["id"].decode() if isinstance(r["id"], bytes) else r["id"]: r for r in rows}


def main():
    with tempfile.TemporaryDirectory() as tmp:
        base = run(tmp, "base", [])
        text = lambda x: x.decode() if isinstance(x, bytes) else x
        # The rows the constants were fitted on (split = fit; a file without the column: all).
        ids = [i for i, r in base.items()
               if r["modelled"] and math.isfinite(r["measured_step_time_s"])
               and math.isfinite(r["predicted_step_time_s"]) and r["measured_step_time_s"] > 0
               and text(r["split"]) in ("fit", "")]
        resid = {i: math.log(base[i]["predicted_step_time_s"] / base[i]["measured_step_time_s"])
                 for i in ids}
        rms = math.sqrt(sum(v * v for v in resid.values()) / len(resid))
        sigma = 1.4826 * statistics.median(abs(v) for v in resid.values())
        print(f"# {len(ids)} split = fit runs with a measured step time; residuals (ln): "
              f"rms {100 * rms:.2f} %, robust sigma {100 * sigma:.2f} %")
        for key, relative, x, step, cap in CONSTANTS:
            lo_x, hi_x = (x * (1 - step), x * (1 + step)) if relative else (max(0.0, x - step),
                                                                            min(1.0, x + step))
            lo = run(tmp, "lo", [f"{key}={lo_x!r}"])
            hi = run(tmp, "hi", [f"{key}={hi_x!r}"])
            d = math.log(hi_x / lo_x) if relative else hi_x - lo_x
            s2 = 0.0
            used = 0
            for i in ids:
                a, b = lo[i]["predicted_step_time_s"], hi[i]["predicted_step_time_s"]
                if not (math.isfinite(a) and math.isfinite(b) and a > 0 and b > 0):
                    continue
                s = math.log(b / a) / d
                s2 += s * s
                used += 1
            w = sigma * math.sqrt(used / s2) if s2 > 0 else math.inf
            capped = w > cap
            print(f"{key:28s} {min(w, cap):.3f} {'relative' if relative else 'absolute'} "
                  f"runs={used} sum_s2={s2:.4g} raw={w:.3g}{' capped (prior)' if capped else ''}")


if __name__ == "__main__":
    main()
