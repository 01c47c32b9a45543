#!/usr/bin/env python3
"""Helper for emit.sh: the launch configuration of rows 0..K-1 of a result file, checked two ways.

Usage: _emit_roundtrip.py FILE.h5 FORMAT K [PPSEARCH_ARGS...]
For each row: `ppsearch-show FILE --row N --emit FORMAT`, then
  1. every flag/key name in the output is in the pinned list tests/emit/<format>.txt;
  2. the output is parsed back into ppsearch's exact-configuration options (--tp --pp --cp --vpp
     --mbs --schedule --recompute --recompute-num-layers --sp --zero --global-batch), that one configuration is run
     (with PPSEARCH_ARGS, e.g. the model) and its row must equal row N: same degrees, same step
     time and peak memory.
  3. for Megatron-LM and NeMo, a row without an "approximated:" note is run once more from the
     framework's own defaults, ppsearch's megatron-core profile, with only the stack settings the
     output states (overlaps, gradient reduction dtype, fused cross entropy, interleaved p2p)
     applied as --set training.*: the printed command must be the job that was costed, so step
     time and peak memory must again equal row N.
A row the framework cannot run (exit 5) must say NOT RUNNABLE and print no flag; it is counted.
Prints "FORMAT: rows K launchable L refused R", then "approximated A", then "settings-checked S",
and exits 1 on the first mismatch.
"""
import os
import re
import shlex
import subprocess
import sys

import h5py

path, fmt, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
extra = sys.argv[4:]
show, ppsearch, src = os.environ["PPSEARCH_SHOW"], os.environ["PPSEARCH"], os.environ["SOURCE_DIR"]
pinned_file = {"megatron": "megatron_args.txt", "nemo": "nemo_keys.txt",
               "torchtitan": "torchtitan_keys.txt"}[fmt]
pinned = {l.strip() for l in open(os.path.join(src, "tests/emit", pinned_file))
          if l.strip() and not l.startswith("#")}


def die(msg):
    print("FAILED: " + msg, file=sys.stderr)
    sys.exit(1)


with h5py.File(path, "r") as f:
    rows = f["candidates"][:k]
    ini = f.attrs["resolved_config"]
layers = int(re.search(r"^layers = (\d+)", ini, re.M).group(1))
seq = int(re.search(r"^seq_length = (\d+)", ini, re.M).group(1))
SCHED = ["gpipe", "1f1b", "interleaved-1f1b", "zb-h1"]
RECOMP = ["none", "selective", "full"]


def parse_megatron(lines):
    toks = shlex.split(" ".join(l.rstrip("\\").strip() for l in lines))
    a, i = {}, 0
    while i < len(toks):
        name = toks[i]
        if name not in pinned:
            die(f"{fmt}: {name} is not a Megatron-LM flag of the pinned version")
        if i + 1 < len(toks) and not toks[i + 1].startswith("--"):
            a[name], i = toks[i + 1], i + 2
        else:
            a[name], i = True, i + 1
    pp = int(a["--pipeline-model-parallel-size"])
    vpp = 1
    if "--num-virtual-stages-per-pipeline-rank" in a:
        vpp = int(a["--num-virtual-stages-per-pipeline-rank"])
    if "--pipeline-model-parallel-layout" in a:
        vpp = len(a["--pipeline-model-parallel-layout"].split("|")) // pp
    rec = a.get("--recompute-granularity", "none")
    rnl = int(a["--recompute-num-layers"]) if a.get("--recompute-method") == "block" else 0
    tf = lambda b: "true" if b else "false"
    sets = {"training.overlap_grad_reduce": tf("--overlap-grad-reduce" in a),
            "training.overlap_param_gather": tf("--overlap-param-gather" in a),
            "training.tp_comm_overlap": tf("--tp-comm-overlap" in a),
            "training.p2p_overlap": tf("--no-overlap-p2p-communication" not in a),
            "training.grad_reduce_in_fp32": tf("--grad-reduce-in-bf16" not in a),
            "training.cross_entropy_fusion": tf("--cross-entropy-loss-fusion" in a)}
    return dict(sets=sets, tp=a["--tensor-model-parallel-size"], pp=pp, cp=a["--context-parallel-size"], vpp=vpp, rnl=rnl,
                mbs=a["--micro-batch-size"], gb=a["--global-batch-size"],
                schedule="interleaved-1f1b" if vpp > 1 else "1f1b", recompute=rec,
                sp="on" if "--sequence-parallel" in a else "off",
                zero=1 if "--use-distributed-optimizer" in a else 0)


def parse_nemo(lines):
    a = {}
    for l in lines:
        key, _, val = l.partition("=")
        if key not in pinned:
            die(f"{fmt}: {key} is not a Megatron-Bridge key of the pinned version")
        a[key] = val.strip('"')
    pp = int(a["model.pipeline_model_parallel_size"])
    v = a["model.virtual_pipeline_model_parallel_size"]
    vpp = 1 if v == "null" else int(v)
    rec = a["model.recompute_granularity"]
    rnl = int(a["model.recompute_num_layers"]) if a.get("model.recompute_method") == "block" else 0
    sets = {"training.overlap_grad_reduce": a["ddp.overlap_grad_reduce"],
            "training.overlap_param_gather": a["ddp.overlap_param_gather"],
            "training.tp_comm_overlap": a["model.tp_comm_overlap"],
            "training.grad_reduce_in_fp32": a["ddp.grad_reduce_in_fp32"],
            "training.cross_entropy_fusion": a["model.cross_entropy_loss_fusion"]}
    if "model.overlap_p2p_comm" in a:
        if a["model.overlap_p2p_comm"] == a["model.batch_p2p_comm"]:
            die("model.overlap_p2p_comm and model.batch_p2p_comm must differ")
        sets["training.p2p_overlap"] = a["model.overlap_p2p_comm"]
    return dict(sets=sets, rnl=rnl, tp=a["model.tensor_model_parallel_size"], pp=pp, cp=a["model.context_parallel_size"],
                vpp=vpp, mbs=a["train.micro_batch_size"], gb=a["train.global_batch_size"],
                schedule="interleaved-1f1b" if vpp > 1 else "1f1b",
                recompute="none" if rec == "null" else rec,
                sp="on" if a["model.sequence_parallel"] == "true" else "off",
                zero=1 if a["ddp.use_distributed_optimizer"] == "true" else 0)


def parse_torchtitan(lines):
    toks = shlex.split(" ".join(l.rstrip("\\").strip() for l in lines))
    a, i = {}, 0
    while i < len(toks):
        name = toks[i]
        if name not in pinned:
            die(f"{fmt}: {name} is not a torchtitan option of the pinned version")
        if i + 1 < len(toks) and not toks[i + 1].startswith("--") and ":" not in toks[i + 1]:
            a[name], i = toks[i + 1], i + 2
        else:
            a[name], i = True, i + 1
    rep = int(a["--parallelism.data_parallel_replicate_degree"])
    shard = int(a["--parallelism.data_parallel_shard_degree"])
    reshard = a.get("--parallelism.fsdp_reshard_after_forward")
    zero = 0 if shard == 1 else (3 if reshard == "always" else 2)
    tp, pp = int(a["--parallelism.tensor_parallel_degree"]), int(a["--parallelism.pipeline_parallel_degree"])
    vpp, schedule = 1, "1f1b"
    if pp > 1:
        per = int(a["--parallelism.pipeline_parallel_layers_per_stage"])
        vpp = layers // (pp * per)
        schedule = {"GPipe": "gpipe", "1F1B": "1f1b", "Interleaved1F1B": "interleaved-1f1b"}[
            a["--parallelism.pipeline_parallel_schedule"]]
    ac = [t for t in toks if t.startswith("activation-checkpoint:")]
    return dict(tp=tp, pp=pp, cp=a["--parallelism.context_parallel_degree"], vpp=vpp, rnl=0,
                mbs=int(a["--training.num_tokens_per_microbatch_per_dp_rank"]) // seq,
                gb=int(a["--training.num_tokens_per_train_step"]) // seq, schedule=schedule,
                recompute=ac[0].split(":")[1],
                sp="on" if tp > 1 and "--parallelism.enable_sequence_parallel" in a else "off",
                zero=zero)


parse = {"megatron": parse_megatron, "nemo": parse_nemo, "torchtitan": parse_torchtitan}[fmt]
launchable = refused = approximated = settings_checked = 0
for n in range(len(rows)):
    r = rows[n]
    p = subprocess.run([show, path, "--row", str(n), "--emit", fmt], capture_output=True, text=True)
    body = [l for l in p.stdout.splitlines() if l.strip() and not l.startswith("#")]
    if p.returncode == 5:
        if body or "NOT RUNNABLE" not in p.stdout:
            die(f"row {n}: refused, yet prints flags or no reason:\n{p.stdout}")
        refused += 1
        continue
    if p.returncode != 0:
        die(f"row {n}: ppsearch-show exit {p.returncode}: {p.stderr}")
    # An approximated row (a "# approximated:" line) still selects the same ppsearch row; what
    # differs is how the framework behaves, which the comment says.
    approx = "approximated:" in p.stdout
    approximated += approx
    c = parse(body)
    gpus = int(r["gpus"])
    args = [ppsearch, "--gpus", str(gpus), "--tp", str(c["tp"]), "--pp", str(c["pp"]), "--cp",
            str(c["cp"]), "--vpp", str(c["vpp"]), "--mbs", str(c["mbs"]), "--schedule",
            c["schedule"], "--recompute", c["recompute"], "--sp", c["sp"], "--zero", str(c["zero"]),
            "--global-batch", str(c["gb"]), "--output", f"rt_{fmt}_{n}.h5", "--overwrite",
            "--quiet"] + extra
    if c["recompute"] == "full":
        args += ["--recompute-num-layers", str(c["rnl"])]
    runs = [("the same stack", args)]
    if "sets" in c and not approx:
        stack = ["--stack", "megatron-core"]
        for k, v in sorted(c["sets"].items()):
            stack += ["--set", f"{k}={v}"]
        runs.append(("the framework's defaults and the printed settings", args + stack))
        settings_checked += 1
    for what, run_args in runs:
        q = subprocess.run(run_args, capture_output=True, text=True)
        if q.returncode != 0:
            die(f"row {n}: {' '.join(run_args)} exit {q.returncode}: {q.stderr}")
        with h5py.File(f"rt_{fmt}_{n}.h5", "r") as g:
            if len(g["candidates"]) != 1:
                die(f"row {n}: the parsed-back options select {len(g['candidates'])} candidates, not 1")
            s = g["candidates"][0]
        for field in ("gpus", "tp", "pp", "cp", "dp", "vpp", "mbs", "num_microbatches",
                      "global_batch_size", "schedule", "recompute", "sequence_parallel", "zero_stage",
                      "recompute_num_layers", "iteration_time_s", "peak_memory_gb"):
            if s[field] != r[field]:
                die(f"row {n}: {fmt} round trip from {what} changes {field}: {r[field]} -> "
                    f"{s[field]}\n{' '.join(run_args)}\n{p.stdout}")
    launchable += 1
print(f"{fmt}: rows {len(rows)} launchable {launchable} refused {refused}")
print(f"approximated {approximated}")
print(f"settings-checked {settings_checked}")
