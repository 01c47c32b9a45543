#!/usr/bin/python3
"""Read a ppsearch HDF5 result file and check it against the contract (docs/interface.md §3).

Run it with Debian's /usr/bin/python3, which has h5py (the python3 first on PATH may not).

    h5check.py FILE [--expect-rows N] [--expect-feasible-min N] [--print-top K]
               [--dump-candidates-hash] [--find tp=4,pp=8,dp=4] [--skip-partition-check]

The checks always run:
  * root attributes: every contract attribute exists with the right kind (str, integer, float);
    candidates_evaluated equals the number of rows and candidates_feasible the feasible ones;
  * /candidates, /best: every contract field exists with the contract type (int32 degrees,
    HDF5 enums with the command-line names, uint8/int8 flags, float64 figures);
  * rows are in rank order: feasible rows first by mfu descending, ties by the candidate key,
    then infeasible rows by the key; no key appears twice;
  * feasible rows: reason "none", finite timings, 0 < mfu <= hfu <= 1, gpus = tp*pp*cp*dp,
    global_batch_size = dp*mbs*num_microbatches;
    infeasible rows: a reason other than "none" and NaN timings;
  * /stages: every candidate index points to a feasible row; unless --skip-partition-check,
    every feasible row has pp*vpp stages 0..pp*vpp-1, each pipeline rank holds vpp of them,
    the layers run contiguously from 0 to the same last layer (L+1) in every candidate, and the
    largest stage memory equals the row's peak_memory_gb;
  * /best: one row per distinct gpus value, identical to the first (best) feasible row of that
    gpus in /candidates, or to its first row when none of that gpus is feasible.

Output: failures go to stderr, one line each ("h5check: FAIL: ..."), then a summary line.
stdout carries only what was asked for:
  --print-top K           the first K rows of /candidates as a table;
  --dump-candidates-hash  the sha256 of the /candidates data as a numpy byte array (one line);
  --find k=v,...          "rank=R row=I mfu=X" for the first matching row (R = 1-based rank,
                          I = 0-based row index); enum fields take their names (schedule=1f1b),
                          sp/zero are accepted for sequence_parallel/zero_stage.
Exit status: 0 all good; 1 a check failed or --find matched nothing; 2 usage error or the file
cannot be read.
"""

import argparse
import hashlib
import sys

try:
    import h5py
    import numpy as np
except ImportError as exc:  # pragma: no cover - environment problem
    print(f"h5check: cannot import h5py/numpy ({exc}); use /usr/bin/python3", file=sys.stderr)
    sys.exit(2)

DEGREES = ["gpus", "tp", "pp", "cp", "dp", "vpp", "mbs", "num_microbatches", "global_batch_size"]
ENUMS = {
    "schedule": {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1"},
    "recompute": {"none", "selective", "full"},
    "infeasible_reason": {"none", "memory"},
}
FIGURES = ["iteration_time_s", "mfu", "hfu", "tflops_per_gpu", "tokens_per_s", "bubble_fraction",
           "peak_memory_gb", "compute_s", "tp_comm_s", "cp_comm_s", "pp_comm_s", "dp_comm_s"]
# Fields that must be NaN in infeasible rows and finite in feasible ones ("timing fields").
TIMINGS = ["iteration_time_s", "mfu", "hfu", "tflops_per_gpu", "tokens_per_s", "bubble_fraction",
           "compute_s", "tp_comm_s", "cp_comm_s", "pp_comm_s", "dp_comm_s"]
OPTIONAL_TIMINGS = ["pipeline_s", "optimizer_s"]  # additions; checked like TIMINGS when present
ROW_FIELDS = {**{n: "int32" for n in DEGREES}, **{n: "enum" for n in ENUMS},
              "sequence_parallel": "uint8", "zero_stage": "int8", "feasible": "uint8",
              **{n: "float64" for n in FIGURES}}
STAGE_FIELDS = {"candidate": "int64", "stage": "int32", "pipeline_rank": "int32",
                "first_layer": "int32", "last_layer": "int32", "time_s": "float64",
                "memory_gb": "float64"}
# Additions: memory_gb broken down (docs/memory.md); checked to sum to memory_gb when present.
STAGE_BREAKDOWN = ["weights_gb", "gradients_gb", "optimizer_gb", "activations_gb", "wstate_gb",
                   "transient_gb", "workspace_gb"]
# Candidate key, the total order of ties (search/candidate.hpp candidate_key).
KEY = ["gpus", "tp", "pp", "cp", "dp", "vpp", "mbs", "schedule", "recompute",
       "sequence_parallel", "zero_stage"]
STR_ATTRS = ["ppsearch_version", "command_line", "created_utc", "resolved_config"]
INT_ATTRS = ["schema_version", "mpi_ranks", "threads_per_rank", "candidates_evaluated",
             "candidates_feasible"]
FLOAT_ATTRS = ["search_wall_s"]
ALIASES = {"sp": "sequence_parallel", "zero": "zero_stage", "reason": "infeasible_reason",
           "m": "num_microbatches", "gbs": "global_batch_size"}
TOP_COLUMNS = ["gpus", "tp", "pp", "cp", "dp", "vpp", "mbs", "num_microbatches", "schedule",
               "recompute", "sequence_parallel", "zero_stage", "mfu", "iteration_time_s",
               "peak_memory_gb", "tokens_per_s", "infeasible_reason"]
MAX_REPORTED = 20  # failures printed per check


class Checker:
    def __init__(self):
        self.failures = []

    def fail(self, msg):
        self.failures.append(msg)

    def require(self, cond, msg):
        if not cond:
            self.fail(msg)
        return bool(cond)


def enum_map(dataset, field):
    """{name: value} of an HDF5 enum member, or None when the member is not an enum."""
    base = dataset.dtype.fields[field][0]
    return h5py.check_enum_dtype(base)


def kind_ok(dtype, kind):
    if kind == "enum":
        return h5py.check_enum_dtype(dtype) is not None
    return dtype == np.dtype(kind).newbyteorder("<") or dtype == np.dtype(kind)


def check_table_type(ck, dset, expected, name):
    fields = dset.dtype.fields
    if not ck.require(fields is not None, f"/{name} is not a compound dataset"):
        return False
    ok = True
    for field, kind in expected.items():
        if field not in fields:
            ck.fail(f"/{name}: field {field!r} missing")
            ok = False
        elif not kind_ok(fields[field][0], kind):
            ck.fail(f"/{name}: field {field!r} has type {fields[field][0]}, expected {kind}")
            ok = False
    if ok and expected is ROW_FIELDS:
        for field, names in ENUMS.items():
            mapping = enum_map(dset, field)
            missing = names - set(mapping)
            ck.require(not missing, f"/{name}: enum {field} lacks names {sorted(missing)}")
    return ok and len(dset.shape) == 1


def check_attrs(ck, f, rows):
    attrs = f.attrs
    for a in STR_ATTRS:
        if ck.require(a in attrs, f"root attribute {a!r} missing"):
            ck.require(isinstance(attrs[a], str),
                       f"root attribute {a!r} is {type(attrs[a]).__name__}, expected str "
                       "(a variable-length string)")
    for a in INT_ATTRS:
        if ck.require(a in attrs, f"root attribute {a!r} missing"):
            ck.require(np.ndim(attrs[a]) == 0 and np.issubdtype(np.asarray(attrs[a]).dtype,
                                                                 np.integer),
                       f"root attribute {a!r} is not an integer scalar")
    for a in FLOAT_ATTRS:
        if ck.require(a in attrs, f"root attribute {a!r} missing"):
            ck.require(np.ndim(attrs[a]) == 0 and np.issubdtype(np.asarray(attrs[a]).dtype,
                                                                 np.floating),
                       f"root attribute {a!r} is not a float scalar")
    if rows is None:
        return
    if "candidates_evaluated" in attrs:
        ck.require(int(attrs["candidates_evaluated"]) == len(rows),
                   f"candidates_evaluated = {int(attrs['candidates_evaluated'])} but /candidates "
                   f"has {len(rows)} rows")
    if "candidates_feasible" in attrs:
        nf = int(np.count_nonzero(rows["feasible"]))
        ck.require(int(attrs["candidates_feasible"]) == nf,
                   f"candidates_feasible = {int(attrs['candidates_feasible'])} but /candidates "
                   f"has {nf} feasible rows")
    for a in ("mpi_ranks", "threads_per_rank"):
        if a in attrs:
            ck.require(int(attrs[a]) >= 1, f"{a} = {int(attrs[a])} < 1")
    if "rank_busy_s" in attrs and "mpi_ranks" in attrs:
        busy = np.asarray(attrs["rank_busy_s"])
        ck.require(busy.ndim == 1 and busy.size in (0, int(attrs["mpi_ranks"])),
                   f"rank_busy_s has shape {busy.shape}, expected ({int(attrs['mpi_ranks'])},)")


def first_bad(mask):
    idx = np.flatnonzero(mask)
    return idx[:MAX_REPORTED].tolist(), idx.size


def check_rows(ck, rows, name):
    n = len(rows)
    if n == 0:
        return
    feas = rows["feasible"].astype(bool)
    ck.require(np.all((rows["feasible"] == 0) | (rows["feasible"] == 1)),
               f"/{name}: feasible not 0/1")
    ck.require(np.all((rows["sequence_parallel"] == 0) | (rows["sequence_parallel"] == 1)),
               f"/{name}: sequence_parallel not 0/1")
    ck.require(np.all((rows["zero_stage"] >= 0) & (rows["zero_stage"] <= 3)),
               f"/{name}: zero_stage outside 0..3")
    for d in ("tp", "pp", "cp", "dp", "vpp", "mbs", "num_microbatches"):
        bad, cnt = first_bad(rows[d] < 1)
        ck.require(cnt == 0, f"/{name}: {d} < 1 in {cnt} rows, e.g. {bad}")
    prod = (rows["tp"].astype(np.int64) * rows["pp"] * rows["cp"] * rows["dp"])
    bad, cnt = first_bad(prod != rows["gpus"])
    ck.require(cnt == 0, f"/{name}: gpus != tp*pp*cp*dp in {cnt} rows, e.g. {bad}")
    gbs = rows["dp"].astype(np.int64) * rows["mbs"] * rows["num_microbatches"]
    bad, cnt = first_bad(feas & (gbs != rows["global_batch_size"]))
    ck.require(cnt == 0, f"/{name}: global_batch_size != dp*mbs*num_microbatches in {cnt} "
               f"feasible rows, e.g. {bad}")
    none_value = enum_map_values(rows, "infeasible_reason").get("none")
    reason = rows["infeasible_reason"]
    bad, cnt = first_bad(feas & (reason != none_value))
    ck.require(cnt == 0, f"/{name}: feasible rows with a reason other than none: {bad}")
    bad, cnt = first_bad(~feas & (reason == none_value))
    ck.require(cnt == 0, f"/{name}: infeasible rows with reason none: {bad}")
    timings = TIMINGS + [t for t in OPTIONAL_TIMINGS if t in rows.dtype.names]
    for t in timings:
        bad, cnt = first_bad(~feas & ~np.isnan(rows[t]))
        ck.require(cnt == 0, f"/{name}: infeasible rows with a non-NaN {t}: {cnt}, e.g. {bad}")
        bad, cnt = first_bad(feas & ~np.isfinite(rows[t]))
        ck.require(cnt == 0, f"/{name}: feasible rows with a non-finite {t}: {cnt}, e.g. {bad}")
    mfu, hfu = rows["mfu"], rows["hfu"]
    with np.errstate(invalid="ignore"):
        bad, cnt = first_bad(feas & ~((mfu > 0) & (mfu <= hfu * (1 + 1e-12)) & (hfu <= 1)))
    ck.require(cnt == 0, f"/{name}: feasible rows without 0 < mfu <= hfu <= 1: {cnt}, e.g. {bad}")


def enum_map_values(rows, field):
    return h5py.check_enum_dtype(rows.dtype.fields[field][0]) or {}


def check_order(ck, rows):
    n = len(rows)
    if n == 0:
        return
    feas = rows["feasible"].astype(bool)
    nf = int(np.count_nonzero(feas))
    bad, cnt = first_bad(~feas[:nf])
    ck.require(cnt == 0, f"/candidates: infeasible rows among the first {nf} (feasible first): {bad}")
    # Expected rank order: (infeasible?, -mfu for feasible rows, candidate key), stable.
    secondary = np.where(feas, -np.nan_to_num(rows["mfu"], nan=0.0), 0.0)
    keys = [rows[k].astype(np.int64) for k in reversed(KEY)] + [secondary, (~feas).astype(int)]
    expected = np.lexsort(keys)
    wrong = np.flatnonzero(expected != np.arange(n))
    if wrong.size:
        i = int(wrong[0])
        ck.fail(f"/candidates: rows not in rank order (feasible by mfu descending, ties and "
                f"infeasible rows by key); first misplaced row {i}: {describe(rows[i])}; "
                f"expected there row {int(expected[i])}: {describe(rows[int(expected[i])])}")
    by_key = np.lexsort([rows[k] for k in reversed(KEY)])
    same = np.ones(n - 1, dtype=bool)
    for k in KEY:
        col = rows[k][by_key]
        same &= col[1:] == col[:-1]
    dups = int(np.count_nonzero(same))
    ck.require(dups == 0, f"/candidates: {dups} duplicate candidate keys, e.g. rows "
               f"{sorted(by_key[1:][same][:MAX_REPORTED].tolist())}")


def check_stages(ck, stages, rows, partition):
    n = len(rows)
    if len(stages) == 0:
        if partition and n and np.any(rows["feasible"] == 1):
            ck.fail("/stages is empty but /candidates has feasible rows")
        return
    cand = stages["candidate"]
    bad, cnt = first_bad((cand < 0) | (cand >= n))
    if not ck.require(cnt == 0, f"/stages: candidate index outside 0..{n - 1} in {cnt} rows, "
                      f"e.g. stage rows {bad}"):
        return
    feas = rows["feasible"].astype(bool)
    bad, cnt = first_bad(~feas[cand])
    ck.require(cnt == 0, f"/stages: {cnt} rows point to infeasible candidates, e.g. stage rows "
               f"{bad} -> candidates {cand[bad].tolist()}")
    for t in ("time_s", "memory_gb"):
        bad, cnt = first_bad(~np.isfinite(stages[t]) | (stages[t] < 0))
        ck.require(cnt == 0, f"/stages: {t} not finite and >= 0 in {cnt} rows, e.g. {bad}")
    parts = [t for t in STAGE_BREAKDOWN if t in stages.dtype.names]
    if parts:
        total = sum(stages[t] for t in parts)
        bad, cnt = first_bad(~np.isclose(total, stages["memory_gb"], rtol=1e-9, atol=1e-9))
        ck.require(cnt == 0, f"/stages: {', '.join(parts)} do not add up to memory_gb in {cnt} "
                   f"rows, e.g. {bad}")
    if not partition:
        return
    order = np.lexsort((stages["stage"], cand))
    s = stages[order]
    c = s["candidate"]
    ids, starts, counts = np.unique(c, return_index=True, return_counts=True)
    missing = np.setdiff1d(np.flatnonzero(feas), ids)
    ck.require(missing.size == 0, f"/stages: {missing.size} feasible candidates have no stages, "
               f"e.g. {missing[:MAX_REPORTED].tolist()}")
    pp = rows["pp"][c].astype(np.int64)
    vpp = rows["vpp"][c].astype(np.int64)
    want = (rows["pp"][ids].astype(np.int64) * rows["vpp"][ids])
    bad = ids[counts != want]
    ck.require(bad.size == 0, f"/stages: candidates whose stage count != pp*vpp: "
               f"{bad[:MAX_REPORTED].tolist()}")
    if bad.size:
        return
    within = np.arange(len(s)) - np.repeat(starts, counts)
    bad, cnt = first_bad(s["stage"] != within)
    ck.require(cnt == 0, f"/stages: stage numbers are not 0..pp*vpp-1 for candidates "
               f"{np.unique(c[bad]).tolist()}")
    bad, cnt = first_bad((s["pipeline_rank"] < 0) | (s["pipeline_rank"] >= pp))
    ck.require(cnt == 0, f"/stages: pipeline_rank outside 0..pp-1 for candidates "
               f"{np.unique(c[bad]).tolist()}")
    pr = c.astype(np.int64) * (int(rows["pp"].max()) + 1) + s["pipeline_rank"]
    _, per_rank_first, per_rank = np.unique(pr, return_index=True, return_counts=True)
    bad = per_rank != vpp[per_rank_first]
    ck.require(not np.any(bad), f"/stages: a pipeline rank does not hold exactly vpp stages, "
               f"candidates {np.unique(c[per_rank_first[bad]])[:MAX_REPORTED].tolist()}")
    bad, cnt = first_bad(s["first_layer"] > s["last_layer"])
    ck.require(cnt == 0, f"/stages: empty layer ranges (first_layer > last_layer) for candidates "
               f"{np.unique(c[bad])[:MAX_REPORTED].tolist()}")
    bad, cnt = first_bad(s["first_layer"][starts] != 0)
    ck.require(cnt == 0, f"/stages: stage 0 does not start at layer 0 for candidates "
               f"{ids[bad].tolist()}")
    same = c[1:] == c[:-1]
    bad, cnt = first_bad(same & (s["first_layer"][1:] != s["last_layer"][:-1] + 1))
    ck.require(cnt == 0, f"/stages: layers not contiguous across stages for candidates "
               f"{np.unique(c[1:][bad])[:MAX_REPORTED].tolist()}")
    last = s["last_layer"][starts + counts - 1]
    ck.require(np.all(last == last[0]), f"/stages: the last stage ends at different layers "
               f"{sorted(set(last.tolist()))[:MAX_REPORTED]} (expected L+1 everywhere)")
    peak = np.maximum.reduceat(s["memory_gb"], starts)
    want_peak = rows["peak_memory_gb"][ids]
    bad = ~np.isclose(peak, want_peak, rtol=1e-9, atol=1e-12)
    ck.require(not np.any(bad), f"/stages: the largest stage memory_gb differs from "
               f"peak_memory_gb for candidates {ids[bad][:MAX_REPORTED].tolist()}")


def check_best(ck, best, rows):
    # One row per GPU count that was searched (docs/interface.md: "one row per value of --gpus"):
    # the best feasible row of that count, or its first (infeasible) row when none is feasible.
    feas = rows["feasible"].astype(bool)
    gpus_all = np.unique(rows["gpus"])
    gpus_best = best["gpus"] if len(best) else np.array([], dtype=np.int32)
    ck.require(len(np.unique(gpus_best)) == len(gpus_best),
               f"/best: gpus values repeat: {sorted(gpus_best.tolist())}")
    ck.require(set(gpus_best.tolist()) == set(gpus_all.tolist()),
               f"/best has gpus {sorted(set(gpus_best.tolist()))}, /candidates has "
               f"{gpus_all.tolist()}")
    for b in best:
        same = rows["gpus"] == b["gpus"]
        idx = np.flatnonzero(feas & same)
        if idx.size == 0:
            idx = np.flatnonzero(same)
        if idx.size == 0:
            continue
        first = rows[int(idx[0])]
        ck.require(b.tobytes() == first.tobytes(),
                   f"/best row for gpus={int(b['gpus'])} differs from the best row "
                   f"{int(idx[0])} of /candidates: {describe(b)} vs {describe(first)}")


SIZING = ["time_to_train_s", "gpu_hours", "cost"]  # additions (docs/results.md)


def config_number(resolved, section, key):
    """A key's value in the resolved_config attribute (INI text), or 0.0."""
    current = None
    for line in resolved.splitlines():
        line = line.strip()
        if line.startswith("["):
            current = line.strip("[]")
        elif current == section and "=" in line:
            k, v = (x.strip() for x in line.split("=", 1))
            if k == key and v:
                return float(v)
    return 0.0


def check_sizing(ck, rows, name, tokens, price):
    # time_to_train_s = tokens / tokens_per_s, gpu_hours = gpus * time / 3600, cost = gpu_hours
    # * price; NaN where tokens (cost: price) is not given, and in infeasible rows.
    if not all(f in rows.dtype.names for f in SIZING):
        ck.fail(f"/{name}: sizing fields {SIZING} missing")
        return
    feas = rows["feasible"].astype(bool)
    for field in SIZING:
        bad, cnt = first_bad(~feas & ~np.isnan(rows[field]))
        ck.require(cnt == 0, f"/{name}: infeasible rows with a non-NaN {field}: {cnt}, e.g. {bad}")
    if tokens <= 0:
        for field in SIZING:
            bad, cnt = first_bad(~np.isnan(rows[field]))
            ck.require(cnt == 0, f"/{name}: {field} set without training.tokens: {bad}")
        return
    with np.errstate(invalid="ignore", divide="ignore"):
        want_t = tokens / rows["tokens_per_s"]
        want_h = rows["gpus"] * want_t / 3600.0
        want_c = want_h * price if price > 0 else np.full(len(rows), np.nan)
    for field, want in (("time_to_train_s", want_t), ("gpu_hours", want_h), ("cost", want_c)):
        got = rows[field]
        if price <= 0 and field == "cost":
            bad, cnt = first_bad(~np.isnan(got))
        else:
            with np.errstate(invalid="ignore"):
                bad, cnt = first_bad(feas & ~(np.abs(got - want) <= 1e-12 * np.abs(want)))
        ck.require(cnt == 0, f"/{name}: {field} differs from its definition in {cnt} rows, "
                   f"e.g. {bad}")


def enum_name(rows, field, value):
    inv = {v: k for k, v in enum_map_values(rows, field).items()}
    return inv.get(int(value), str(int(value)))


def describe(row):
    parts = []
    for k in KEY + ["mfu"]:
        v = row[k]
        if k in ENUMS:
            inv = {val: name for name, val in (h5py.check_enum_dtype(
                row.dtype.fields[k][0]) or {}).items()}
            parts.append(f"{k}={inv.get(int(v), int(v))}")
        elif isinstance(v, (float, np.floating)):
            parts.append(f"{k}={float(v):.6g}")
        else:
            parts.append(f"{k}={int(v)}")
    return "(" + " ".join(parts) + ")"


def print_top(rows, k):
    cols = [c for c in TOP_COLUMNS if c in rows.dtype.names]
    table = [["rank"] + cols]
    for i, r in enumerate(rows[:k]):
        line = [str(i + 1)]
        for c in cols:
            v = r[c]
            if c in ENUMS:
                line.append(enum_name(rows, c, v))
            elif np.issubdtype(rows.dtype.fields[c][0], np.floating):
                line.append(f"{float(v):.4g}")
            else:
                line.append(str(int(v)))
        table.append(line)
    widths = [max(len(row[j]) for row in table) for j in range(len(table[0]))]
    for row in table:
        print("  ".join(cell.rjust(w) for cell, w in zip(row, widths)))


def parse_find(text, rows):
    conds = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        if "=" not in item:
            raise ValueError(f"--find: {item!r} is not key=value")
        key, value = (s.strip() for s in item.split("=", 1))
        field = ALIASES.get(key, key)
        if field not in rows.dtype.names:
            raise ValueError(f"--find: unknown field {key!r} (fields: {', '.join(rows.dtype.names)})")
        if field in ENUMS or h5py.check_enum_dtype(rows.dtype.fields[field][0]) is not None:
            mapping = enum_map_values(rows, field)
            if value not in mapping:
                raise ValueError(f"--find: {field} = {value!r}; names: {', '.join(mapping)}")
            conds.append((field, mapping[value]))
        elif field == "sequence_parallel" and value in ("on", "off"):
            conds.append((field, 1 if value == "on" else 0))
        elif np.issubdtype(rows.dtype.fields[field][0], np.floating):
            conds.append((field, float(value)))
        else:
            conds.append((field, int(value)))
    if not conds:
        raise ValueError("--find: no key=value given")
    return conds


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--expect-rows", type=int, metavar="N", help="/candidates has exactly N rows")
    ap.add_argument("--expect-feasible-min", type=int, metavar="N",
                    help="at least N feasible rows")
    ap.add_argument("--print-top", type=int, metavar="K", help="print the first K rows")
    ap.add_argument("--dump-candidates-hash", action="store_true",
                    help="print the sha256 of the /candidates data")
    ap.add_argument("--find", metavar="K=V,...", help="print rank and mfu of the first match")
    ap.add_argument("--skip-partition-check", action="store_true",
                    help="check only that /stages points to feasible rows")
    args = ap.parse_args(argv)

    try:
        f = h5py.File(args.file, "r")
    except OSError as exc:
        print(f"h5check: cannot open {args.file!r}: {exc}", file=sys.stderr)
        return 2

    ck = Checker()
    with f:
        rows = stages = best = None
        for name in ("candidates", "stages", "best"):
            ck.require(name in f and isinstance(f[name], h5py.Dataset), f"/{name} missing")
        if "candidates" in f and check_table_type(ck, f["candidates"], ROW_FIELDS, "candidates"):
            rows = f["candidates"][...]
        if "best" in f and check_table_type(ck, f["best"], ROW_FIELDS, "best"):
            best = f["best"][...]
        if "stages" in f and check_table_type(ck, f["stages"], STAGE_FIELDS, "stages"):
            stages = f["stages"][...]
        check_attrs(ck, f, rows)
        resolved = f.attrs.get("resolved_config", "")
        if isinstance(resolved, bytes):
            resolved = resolved.decode()
        tokens = config_number(resolved, "training", "tokens")
        price = config_number(resolved, "cluster", "price_per_gpu_hour")

    if rows is not None:
        check_rows(ck, rows, "candidates")
        check_order(ck, rows)
        check_sizing(ck, rows, "candidates", tokens, price)
        if stages is not None:
            check_stages(ck, stages, rows, not args.skip_partition_check)
        if best is not None:
            ck.require(best.dtype == rows.dtype, "/best and /candidates have different types")
            if best.dtype == rows.dtype:
                check_rows(ck, best, "best")
                check_best(ck, best, rows)
                check_sizing(ck, best, "best", tokens, price)
        if args.expect_rows is not None:
            ck.require(len(rows) == args.expect_rows,
                       f"/candidates has {len(rows)} rows, expected {args.expect_rows}")
        nf = int(np.count_nonzero(rows["feasible"]))
        if args.expect_feasible_min is not None:
            ck.require(nf >= args.expect_feasible_min,
                       f"{nf} feasible rows, expected at least {args.expect_feasible_min}")

    status = 0
    if rows is not None:
        if args.print_top:
            print_top(rows, args.print_top)
        if args.dump_candidates_hash:
            print(hashlib.sha256(np.ascontiguousarray(rows).tobytes()).hexdigest())
        if args.find:
            try:
                conds = parse_find(args.find, rows)
            except ValueError as exc:
                print(f"h5check: {exc}", file=sys.stderr)
                return 2
            mask = np.ones(len(rows), dtype=bool)
            for field, value in conds:
                mask &= rows[field] == value
            hits = np.flatnonzero(mask)
            if hits.size:
                i = int(hits[0])
                print(f"rank={i + 1} row={i} mfu={float(rows['mfu'][i]):.17g}")
            else:
                print(f"h5check: no row matches {args.find}", file=sys.stderr)
                status = 1

    for msg in ck.failures:
        print(f"h5check: FAIL: {msg}", file=sys.stderr)
    if ck.failures:
        print(f"h5check: {args.file}: {len(ck.failures)} check(s) failed", file=sys.stderr)
        return 1
    nrows = len(rows) if rows is not None else 0
    nfeas = int(np.count_nonzero(rows["feasible"])) if rows is not None else 0
    print(f"h5check: {args.file}: OK ({nrows} rows, {nfeas} feasible, "
          f"{len(stages) if stages is not None else 0} stage rows, "
          f"{len(best) if best is not None else 0} best rows)", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
