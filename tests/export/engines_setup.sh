#!/usr/bin/env bash
# Create (or reuse) the separate virtualenv that the opt-in `pytest -m engines` tests use to feed exported
# files to the engines' own config parsers. Nothing is installed into the project's main .venv.
#
#   bash tests/export/engines_setup.sh            # creates <repo>/.venv-engines
#   RUNPLAN_ENGINES_VENV=/some/dir bash tests/export/engines_setup.sh
#
# Pinned versions (the ones the checked-in key lists in src/runplan/export/data/ were read from):
#   torch 2.13.0 (CPU build: a plain `pip install torch` pulls a multi-GB CUDA build),
#   torchtitan 0.2.2 (--no-deps: its dependency list names datasets/tensorboard/torchdata, which only the
#   trainer needs; the config parser needs tyro, and tomllib from the standard library),
#   deepspeed 0.19.8 with DS_BUILD_OPS=0 (no CUDA/C++ ops are compiled; the config parser is pure Python),
#   datasets, tensorboard and torchdata --no-deps (torchtitan imports them on the way to its pipeline and
#   dataset code, which the check runs; torchdata's own dependency list would pull another torch).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${RUNPLAN_ENGINES_VENV:-$repo/.venv-engines}"
python="${PYTHON:-python3}"
stamp="$venv/.runplan-engines-ok-3"  # bump when the package list changes
if [[ -f "$stamp" ]]; then
  echo "engines venv ready: $venv"
  exit 0
fi
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
# The CPU build of torch ("+cpu" local version, so a CUDA build can never be picked): from a local wheel
# directory or index that pip is configured with, else from the PyTorch CPU index.
torch_req="torch==${RUNPLAN_TORCH_VERSION:-2.13.0}+cpu"
"${pip[@]}" "$torch_req" 2>/dev/null \
  || "${pip[@]}" "$torch_req" --extra-index-url "${RUNPLAN_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
"${pip[@]}" --no-deps "torchtitan==${RUNPLAN_TORCHTITAN_VERSION:-0.2.2}"
# What torchtitan's config package imports on the way (torchtitan/__init__ pulls in its model converters):
# tyro for the parser, tokenizers, triton (imported by the MoE kernels module; pure import, no GPU needed).
"${pip[@]}" tyro einops tokenizers triton setuptools wheel datasets tensorboard
"${pip[@]}" --no-deps torchdata
# DeepSpeed ships as an sdist whose setup.py imports torch: build it against the torch above (no build
# isolation, which would fetch a second, CUDA torch) and compile no ops.
DS_BUILD_OPS=0 DS_SKIP_CUDA_CHECK=1 "${pip[@]}" --no-build-isolation \
  "deepspeed==${RUNPLAN_DEEPSPEED_VERSION:-0.19.8}"
"$venv/bin/python" - <<'PY'
import deepspeed, torch, torchtitan
from torchtitan.config import ConfigManager  # noqa: F401
from torchtitan.hf_datasets.text_datasets import _validate_dataset  # noqa: F401
from deepspeed.runtime.config import DeepSpeedConfig  # noqa: F401
print("torch", torch.__version__, "torchtitan", torchtitan.__version__, "deepspeed", deepspeed.__version__)
PY
touch "$stamp"
echo "engines venv ready: $venv"
