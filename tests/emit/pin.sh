#!/usr/bin/env bash
# Regenerates the pinned flag/key lists (megatron_args.txt, nemo_keys.txt, torchtitan_keys.txt)
# from clones of the three frameworks: pin.sh MEGATRON_LM_GIT MEGATRON_BRIDGE_GIT TORCHTITAN_GIT.
# The lists are data read from each project's parser / config dataclasses (nothing is run);
# the emitter test checks every emitted name against them. Not run by the tests.
set -euo pipefail
M=$1 B=$2 T=$3
here=$(cd "$(dirname "$0")" && pwd)
hdr() { # repo dir file...
  local c d; c=$(git -C "$2" log -1 --format=%H HEAD); d=$(git -C "$2" log -1 --format=%cI HEAD)
  echo "# repository: $1"; echo "# commit: $c ($d)"; shift 2; echo "# read from: $*"
  echo "# extracted by tests/emit/pin.sh on $(date -u +%Y-%m-%d); one accepted name a line"
}
{ hdr github.com/NVIDIA/Megatron-LM "$M" megatron/training/arguments.py "(add_argument + ArgumentGroupFactory dataclasses)"
  python3 "$here/extract_megatron_args.py" "$M"; } > "$here/megatron_args.txt"
X="$here/extract_dataclass_keys.py"
{ hdr github.com/NVIDIA-NeMo/Megatron-Bridge "$B" "src/megatron/bridge/training/config.py (ConfigContainer: model=GPTModelProvider, train, optimizer, ddp, dataset) and the Megatron-LM bases at" "$(git -C "$M" log -1 --format=%H HEAD)"
  { python3 "$X" model. "$B,$M" GPTModelProvider
    python3 "$X" train. "$B,$M" TrainingConfig
    python3 "$X" optimizer. "$B,$M" OptimizerConfig
    python3 "$X" ddp. "$B,$M" DistributedDataParallelConfig
    python3 "$X" dataset. "$B,$M" GPTDatasetConfig; } | sort -u; } > "$here/nemo_keys.txt"
{ hdr github.com/pytorch/torchtitan "$T" "torchtitan/config/configs.py (TrainingConfig, ParallelismConfig, CompileConfig), torchtitan/components/optimizer/optimizer.py (OptimizersContainer.Config, the trainer's optimizer field), torchtitan/distributed/activation_checkpoint.py (ActivationCheckpointingConfig subcommands)"
  { python3 "$X" --training. "$T" TrainingConfig
    python3 "$X" --optimizer. "$T" OptimizersContainer.Config
    python3 "$X" --parallelism. "$T" ParallelismConfig
    python3 "$X" --compile. "$T" CompileConfig
    git -C "$T" show HEAD:torchtitan/distributed/activation_checkpoint.py |
      grep -oE 'subcommand\("[a-z-]+"\)' | sed -E 's/subcommand\("([a-z-]+)"\)/activation-checkpoint:\1/'; } | sort -u; } > "$here/torchtitan_keys.txt"
