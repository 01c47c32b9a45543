#!/usr/bin/env bash
# tools/ppsearch-plot: a small search, then the three figures, headless (Agg). Each image must
# exist, be a real PNG (signature) or SVG, be larger than a few KB and have more than a handful of
# distinct colours (a blank or single-colour canvas fails). Files carrying the newer optional
# fields (/stages memory breakdown, /best time-to-train) are plotted too. Bad input: a missing
# file, a file that is not HDF5, an HDF5 file that is not a result, bad options -> exit 2 and no
# image; a result without a feasible row -> exit 1 and no image. Skipped (77) when python3-matplotlib is not installed (.ci/install-deps.sh installs it).
source "$SOURCE_DIR/tests/e2e/_lib.sh"
PLOT="$SOURCE_DIR/tools/ppsearch-plot"
export MPLCONFIGDIR=$PWD/mplconfig  # matplotlib's font cache: here, not in $HOME
if ! "$PY" -c 'import matplotlib, h5py, numpy' 2>/dev/null; then
  echo "python3-matplotlib (or h5py) is not installed for $PY: skipped"
  exit 77
fi
rm -rf plots svg bad future ./*.h5 notes.txt

# A pipelined GPU count (80 = 5 x 16) next to a plain one, so /best has two rows and /stages
# has a multi-rank partition.
expect_rc 0 "$PPSEARCH" --gpus 64,80 --model llama3-70b --output r.h5 --overwrite --quiet

# check_images DIR EXT MIN_BYTES: every figure is there, a valid image, big and not blank.
check_images() {
  "$PY" - "$@" <<'PY'
import sys, os
import numpy as np
d, ext, min_bytes = sys.argv[1], sys.argv[2], int(sys.argv[3])
bad = 0
for stem in ("best_vs_gpus", "top_breakdown", "stage_memory"):
    p = os.path.join(d, f"{stem}.{ext}")
    if not os.path.isfile(p):
        print(f"missing: {p}"); bad += 1; continue
    size = os.path.getsize(p)
    head = open(p, "rb").read(4096)
    if ext == "png":
        if head[:8] != b"\x89PNG\r\n\x1a\n":
            print(f"{p}: no PNG signature"); bad += 1; continue
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.image as mpimg
        img = mpimg.imread(p)
        px = img.reshape(-1, img.shape[-1]) if img.ndim == 3 else img.reshape(-1, 1)
        colours = len(np.unique(np.round(px * 255).astype(np.uint8), axis=0))
        ok = size > min_bytes and colours > 8 and img.shape[0] >= 200 and img.shape[1] >= 300
        print(f"{p}: {size} bytes, {img.shape[1]}x{img.shape[0]} px, {colours} colours"
              + ("" if ok else "  <- too small or blank"))
    else:
        text = open(p, encoding="utf-8").read()
        n_paths = text.count("<path")
        ok = (head.lstrip().startswith(b"<?xml") and "<svg" in text and size > min_bytes
              and n_paths > 10)
        print(f"{p}: {size} bytes, {n_paths} paths" + ("" if ok else "  <- not a real drawing"))
    bad += not ok
sys.exit(1 if bad else 0)
PY
}

# ---- 1. PNG, default options ----------------------------------------------------------------
expect_rc 0 "$PY" "$PLOT" r.h5 --out plots
cat out.txt
[ "$(wc -l <out.txt)" = 3 ] && ok "three paths printed" || bad "expected 3 paths: $(cat out.txt)"
if check_images plots png 8000; then ok "PNG figures are real images"; else bad "PNG figures"; fi
# Run as users do: the script itself (shebang /usr/bin/python3), default folder beside the file.
expect_rc 0 "$PLOT" r.h5 --top 3
[ -s r_plots/top_breakdown.png ] && ok "default folder r_plots/" || bad "no r_plots/top_breakdown.png"
# --gpus 80: the breakdown and the memory of the pipelined best row (5 pipeline ranks).
expect_rc 0 "$PY" "$PLOT" r.h5 --out plots80 --gpus 80 --top 4
if check_images plots80 png 8000; then ok "--gpus 80 figures"; else bad "--gpus 80 figures"; fi

# ---- 2. SVG ------------------------------------------------------------------------------------
expect_rc 0 "$PY" "$PLOT" r.h5 --out svg --format svg
if check_images svg svg 8000; then ok "SVG figures"; else bad "SVG figures"; fi

# ---- 3. newer optional fields: stacked memory per kind, time-to-train ------------------------
# A copy of r.h5 whose /stages rows carry the memory breakdown (split of memory_gb) and whose
# /best carries time_to_train_s, gpu_hours and cost, as later schema additions will.
"$PY" - r.h5 future.h5 <<'PY' && ok "made future.h5" || bad "could not make future.h5"
import sys
import h5py
import numpy as np
from numpy.lib import recfunctions as rf
src, dst = sys.argv[1], sys.argv[2]
with h5py.File(src, "r") as f, h5py.File(dst, "w") as g:
    for k, v in f.attrs.items():
        g.attrs[k] = v
    g["candidates"] = f["candidates"][...]
    st = f["stages"][...]
    shares = {"weights_gb": .2, "gradients_gb": .1, "optimizer_gb": .3, "activations_gb": .3,
              "wstate_gb": .0, "transient_gb": .05, "workspace_gb": .05}
    st = rf.append_fields(st, list(shares), [st["memory_gb"] * s for s in shares.values()],
                          usemask=False)
    g["stages"] = st
    b = f["best"][...]
    ttt = 15e12 / b["tokens_per_s"]
    g["best"] = rf.append_fields(b, ["time_to_train_s", "gpu_hours", "cost"],
                                 [ttt, ttt * b["gpus"] / 3600, ttt * b["gpus"] / 3600 * 2.5],
                                 usemask=False)
PY
expect_rc 0 "$PY" "$PLOT" future.h5 --out future --gpus 80
if check_images future png 8000; then ok "figures with the optional fields"; else bad "optional fields"; fi
if cmp -s plots80/stage_memory.png future/stage_memory.png; then
  bad "stage_memory ignores the memory breakdown fields (same image as without them)"
else
  ok "stage_memory stacks the breakdown fields"
fi

# ---- 4. bad input: exit 2, a message naming the file or option, no image -------------------
mkdir -p bad
expect_rc 2 "$PY" "$PLOT" nonexistent.h5 --out bad
grep -q "nonexistent.h5: no such file" err.txt && ok "missing file named" || bad "message: $(cat err.txt)"
printf 'gpus,tp\n128,8\n' > notes.txt
expect_rc 2 "$PY" "$PLOT" notes.txt --out bad
grep -q "notes.txt: not an HDF5 file" err.txt && ok "non-HDF5 file named" || bad "message: $(cat err.txt)"
"$PY" -c 'import h5py; h5py.File("other.h5", "w")["x"] = [1, 2, 3]'
expect_rc 2 "$PY" "$PLOT" other.h5 --out bad
grep -q "other.h5: no dataset /candidates" err.txt && ok "non-result HDF5 named" || bad "message: $(cat err.txt)"
expect_rc 2 "$PY" "$PLOT" r.h5 --out bad --top 0
grep -q -- "--top: top = 0" err.txt && ok "--top 0 named" || bad "message: $(cat err.txt)"
expect_rc 2 "$PY" "$PLOT" r.h5 --out bad --gpus 96
grep -q -- "--gpus: gpus = 96: no feasible row with that GPU count in /best (it has: 64,80)" err.txt &&
  ok "--gpus 96 named" || bad "message: $(cat err.txt)"
expect_rc 2 "$PY" "$PLOT" r.h5 --out bad --row 99999999
grep -q -- "--row: row = 99999999" err.txt && ok "--row out of range named" || bad "message: $(cat err.txt)"
expect_rc 2 "$PY" "$PLOT" r.h5 --out notes.txt
grep -q -- "--out: out = notes.txt" err.txt && ok "--out on a file named" || bad "message: $(cat err.txt)"
# A result with no feasible row (ppsearch exit 3 still writes it): exit 1, said plainly.
expect_rc 3 "$PPSEARCH" --gpus 64 --model llama3-405b --tp 1 --pp 1 --cp 1 --zero 0 \
  --output infeasible.h5 --overwrite --quiet
expect_rc 1 "$PY" "$PLOT" infeasible.h5 --out bad
grep -q "infeasible.h5: nothing to plot: /best is empty" err.txt && ok "no feasible row said" ||
  bad "message: $(cat err.txt)"
n=$(find bad -type f | wc -l)
[ "$n" = 0 ] && ok "no image written on bad input" || bad "$n file(s) written on bad input"

finish
