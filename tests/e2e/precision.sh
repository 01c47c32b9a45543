#!/usr/bin/env bash
# FP8 training (docs/precision.md): refused with exit 2 and nothing written on a GPU without FP8
# tensor cores (by option, by --set and by an MXFP8 recipe on Hopper); on H100 the FP8 search
# is faster than bf16, its MFU is still model FLOPs against the BF16 peak, and the resolved
# configuration in the results file states the precision.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
rm -rf run && mkdir run && cd run
common=(--model llama3-8b --gpus 16 --tp 1,2 --pp 1,2 --threads 2 --quiet --overwrite)

expect_rc 2 "$PPSEARCH" "${common[@]}" --cluster a100-8gpu-hdr --precision fp8 --output a.h5
expect_stderr "ppsearch: error: --precision: training.precision = fp8: bf16 (gpu 'a100-80gb' has no FP8 tensor cores: gpu.fp8_peak_tflops = 0)"
[ ! -e a.h5 ] && ok "nothing written" || bad "a.h5 written"
expect_rc 2 "$PPSEARCH" "${common[@]}" --cluster a100-8gpu-hdr --set training.precision=fp8 --output a.h5
grep -q "training.precision = fp8: bf16 (gpu 'a100-80gb' has no FP8 tensor cores" err.txt &&
  ok "--set: same message" || bad "--set: $(cat err.txt)"
expect_rc 2 "$PPSEARCH" "${common[@]}" --cluster h100-8gpu-ndr --precision fp8 \
  --set training.fp8_recipe=mxfp8 --output a.h5
grep -q "training.fp8_recipe = mxfp8: delayed or current (gpu 'h100' has no MXFP8 tensor cores" err.txt &&
  ok "mxfp8 refused on h100" || bad "mxfp8 on h100: $(cat err.txt)"
expect_rc 2 "$PPSEARCH" "${common[@]}" --cluster h100-8gpu-ndr --precision fp4 --output a.h5
grep -q "training.precision = fp4: one of bf16, fp8" err.txt && ok "fp4 refused" || bad "fp4: $(cat err.txt)"

expect_rc 0 "$PPSEARCH" "${common[@]}" --cluster h100-8gpu-ndr --output bf16.h5
expect_rc 0 "$PPSEARCH" "${common[@]}" --cluster h100-8gpu-ndr --precision fp8 --output fp8.h5
expect_rc 0 "$PPSEARCH" "${common[@]}" --cluster b200-8gpu-xdr --precision fp8 \
  --set training.fp8_recipe=mxfp8 --output mx.h5
"$PY" - bf16.h5 fp8.h5 <<'PY' && ok "fp8 faster, MFU against the BF16 peak, precision stated" || bad "fp8 results"
import sys, h5py, numpy as np
def load(path):
    with h5py.File(path, "r") as f:
        c = f["candidates"][...]
        return c[c["feasible"] == 1], f.attrs["resolved_config"]
b, bcfg = load(sys.argv[1])
f, fcfg = load(sys.argv[2])
assert "precision = bf16" in bcfg and "precision = fp8" in fcfg, fcfg
assert "fp8_peak_tflops = 1979" in fcfg, fcfg
bt, ft = b["iteration_time_s"].min(), f["iteration_time_s"].min()
assert ft < 0.85 * bt, (ft, bt)
# mfu = model FLOPs / (time × GPUs × 989 TFLOP/s, the dense BF16 peak) in both runs.
for rows in (b, f):
    np.testing.assert_allclose(rows["mfu"] * 989.0, rows["tflops_per_gpu"], rtol=1e-9)
assert f["mfu"].max() > b["mfu"].max()
with h5py.File(sys.argv[1], "r") as h:
    basis = h.attrs["mfu_basis"]
assert basis == "model FLOPs / (iteration time x GPUs x gpu.peak_tflops = 989 TFLOP/s, the dense BF16 peak); precision bf16", basis
with h5py.File(sys.argv[2], "r") as h:
    basis = h.attrs["mfu_basis"]
assert basis.endswith("precision fp8 (recipe delayed, linear GEMMs against gpu.fp8_peak_tflops = 1979 TFLOP/s)"), basis
PY
# The launch configurations carry the FP8 flags (Megatron-LM --fp8-format/--fp8-recipe).
expect_rc 0 "$PPSEARCH" "${common[@]}" --cluster h100-8gpu-ndr --zero 1 --precision fp8 \
  --set training.fp8_recipe=current --set training.fp8_param_gather=true --output e.h5 --emit megatron
grep -q -- "--fp8-format hybrid" out.txt && grep -q -- "--fp8-recipe tensorwise" out.txt &&
  grep -q -- "--fp8-param-gather" out.txt && ok "megatron FP8 flags" || bad "megatron FP8 flags"
expect_rc 0 "$PPSEARCH" "${common[@]}" --cluster b200-8gpu-xdr --zero 1 --precision fp8 \
  --set training.fp8_recipe=mxfp8 --output e.h5 --emit nemo
grep -q "model.fp8_recipe=mxfp8" out.txt && ok "nemo FP8 recipe" || bad "nemo FP8 recipe"
finish
