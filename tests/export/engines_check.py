"""Feed exported files to the engines' own config parsers. Runs inside the engines virtualenv
(tests/export/engines_setup.sh), not the project's: ``python engines_check.py MANIFEST.json``.

The manifest lists {"path", "target", "expect": {...}}; prints one JSON line per file with what the parser read.
torchtitan: ``ConfigManager().parse_args(["--job.config_file", path])`` (unknown keys raise ValueError).
DeepSpeed: ``DeepSpeedConfig(path, mpu=...)`` after a 1-rank gloo process group on the loopback address, with
an mpu whose data-parallel world size is the plan's d, so DeepSpeed's own batch assertion
(train_batch_size == micro x accumulation x world size) runs with the plan's DP.
"""

from __future__ import annotations

import json
import os
import sys


def check_torchtitan(path: str, expect: dict) -> dict:
    from torchtitan.config import ConfigManager

    cfg = ConfigManager().parse_args(["--job.config_file", path])
    got = {
        "tp": cfg.parallelism.tensor_parallel_degree,
        "pp": cfg.parallelism.pipeline_parallel_degree,
        "cp": cfg.parallelism.context_parallel_degree,
        "ep": cfg.parallelism.expert_parallel_degree,
        "dp": cfg.parallelism.data_parallel_shard_degree * cfg.parallelism.data_parallel_replicate_degree,
        "global_batch": cfg.training.global_batch_size,
        "steps": cfg.training.steps,
        "interval": cfg.checkpoint.interval,
        "keep": cfg.checkpoint.keep_latest_k,
        "async_mode": cfg.checkpoint.async_mode,
        "ac_mode": cfg.activation_checkpoint.mode,
        "warmup": cfg.lr_scheduler.warmup_steps,
        "decay_type": cfg.lr_scheduler.decay_type,
        "lr": cfg.optimizer.lr,
    }
    return got


def check_deepspeed(path: str, expect: dict) -> dict:
    import deepspeed.comm as dist
    from deepspeed.runtime.config import DeepSpeedConfig

    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29517")
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
        dist.init_distributed(dist_backend="gloo", auto_mpi_discovery=False)

    class Mpu:  # what Megatron-style model-parallel units expose to DeepSpeed
        def get_data_parallel_world_size(self) -> int:
            return expect["dp"]

        def get_data_parallel_rank(self) -> int:
            return 0

    cfg = DeepSpeedConfig(path, mpu=Mpu())
    return {
        "world_size": cfg.world_size,
        "train_batch_size": cfg.train_batch_size,
        "micro": cfg.train_micro_batch_size_per_gpu,
        "accumulation": cfg.gradient_accumulation_steps,
        "zero_stage": int(cfg.zero_optimization_stage),
        "bf16": cfg.bfloat16_config.enabled,
        "clip": cfg.gradient_clipping,
        "scheduler": cfg.scheduler_name,
        "optimizer": cfg.optimizer_name,
    }


def main(manifest_path: str) -> None:
    import deepspeed
    import torch
    import torchtitan

    print(
        json.dumps(
            {
                "versions": {
                    "torch": torch.__version__,
                    "torchtitan": torchtitan.__version__,
                    "deepspeed": deepspeed.__version__,
                }
            }
        ),
        flush=True,
    )
    with open(manifest_path) as handle:
        manifest = json.load(handle)
    for item in manifest:
        check = check_torchtitan if item["target"] == "torchtitan" else check_deepspeed
        try:
            got = check(item["path"], item["expect"])
            print(json.dumps({"path": item["path"], "ok": True, "got": got}), flush=True)
        except Exception as error:  # report, the pytest side fails the file
            print(
                json.dumps({"path": item["path"], "ok": False, "error": f"{type(error).__name__}: {error}"}),
                flush=True,
            )


if __name__ == "__main__":
    main(sys.argv[1])
