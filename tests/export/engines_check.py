"""Run the engines' own start-up checks on exported files, on CPU. Runs inside the engines virtualenv
(tests/export/engines_setup.sh), not the project's: ``python engines_check.py MANIFEST.json``; the Megatron part
runs with ``PYTHONPATH=<Megatron-LM checkout>``: ``python engines_check.py --megatron MANIFEST.json``.

The manifest lists {"path", "target", "expect": {...}} (and "argv" for Megatron); one JSON line is printed per
file with what the engine read, or the exception it raised.

torchtitan (0.2.2): ``ConfigManager().parse_args`` (unknown keys raise); ``ParallelDims(...).build_mesh()`` over
a fake process group of the plan's world size (``torch.testing._internal.distributed.fake_pg``), so torchtitan's
own dimension checks and mesh unflattening run; ``pipeline_llm`` up to the point where it would cut the model
(its virtual-stage validation and ``generate_llm_fqn_per_model_part``), the model cut replaced by a stub that
records the stages; the dataset and tokenizer placeholders through ``_validate_dataset`` and
``HuggingFaceTokenizer`` (they must raise); for registered llama3 flavors, the architecture the flavor builds.
DeepSpeed (0.19.8): ``DeepSpeedConfig(path, mpu=<DP = d>)`` after a 1-rank gloo group (its batch assertion with
the plan's d), and with p > 1 ``PipelineEngine.__init__`` on that config with the engine base replaced by a stub,
so DeepSpeed's own ZeRO/pipeline assertion runs; the same with ZeRO-3 must trip it.
Megatron-LM: ``parse_args`` and ``validate_args`` with WORLD_SIZE = the plan's GPUs (the GPU generation probes,
which need CUDA, answer Hopper), then ``calculate_padded_vocab_size``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import types


class _StagesCut(Exception):
    """Raised by the stub that replaces torchtitan's model cut: carries the stages pipeline_llm computed."""

    def __init__(self, stages: list[list[str]]) -> None:
        super().__init__("stages computed")
        self.stages = stages


def _torchtitan_mesh(cfg, world: int) -> None:
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore
    from torchtitan.distributed.parallel_dims import ParallelDims

    par = cfg.parallelism
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    try:
        ParallelDims(
            dp_shard=par.data_parallel_shard_degree,
            dp_replicate=par.data_parallel_replicate_degree,
            cp=par.context_parallel_degree,
            tp=par.tensor_parallel_degree,
            pp=par.pipeline_parallel_degree,
            ep=par.expert_parallel_degree,
            etp=par.expert_tensor_parallel_degree,
            world_size=world,
        ).build_mesh()
    finally:
        dist.destroy_process_group()


def _torchtitan_stages(cfg, n_layers: int) -> list[int]:
    """torchtitan's own pipeline split of the model (pipeline_llm), as layers per stage."""
    import torchtitan.distributed.pipeline_parallel as pp_module

    if cfg.parallelism.pipeline_parallel_degree == 1:
        return [n_layers]

    def cut(model, pp_mesh, schedule, device, module_names_per_stage):
        raise _StagesCut(module_names_per_stage)

    dims = types.SimpleNamespace(pp=cfg.parallelism.pipeline_parallel_degree, get_mesh=lambda name: None)
    original = pp_module.pipeline_module_split
    pp_module.pipeline_module_split = cut
    try:
        pp_module.pipeline_llm(None, dims, cfg, "cpu", types.SimpleNamespace(n_layers=n_layers), None, None)
    except _StagesCut as done:
        return [sum(name.startswith("layers.") for name in stage) for stage in done.stages]
    finally:
        pp_module.pipeline_module_split = original
    raise AssertionError("pipeline_llm returned without cutting the model")


def _raises(call) -> str:
    try:
        call()
    except Exception as error:
        return type(error).__name__
    return ""


def _torchtitan_flavor(name: str, flavor: str) -> dict | None:
    """The architecture torchtitan's registered flavor builds (None: not registered)."""
    import torch
    from torchtitan.models.llama3 import llama3_args
    from torchtitan.models.llama3.model.model import FeedForward

    if name != "llama3" or flavor not in llama3_args:
        return None
    args = llama3_args[flavor]
    with torch.device("meta"):
        ffn = FeedForward(args.dim, 4 * args.dim, args.multiple_of, args.ffn_dim_multiplier)
    s = args.rope_scaling_args
    return {
        "n_layers": args.n_layers,
        "dim": args.dim,
        "n_heads": args.n_heads,
        "n_kv_heads": args.n_kv_heads or args.n_heads,
        "ffn_hidden": ffn.w1.out_features,
        "vocab_size": args.vocab_size,
        "rope_theta": float(args.rope_theta),
        "rope_scaling": {
            "type": "llama3",
            "factor": s.scaling_factor,
            "original_max_position_embeddings": s.original_max_position_embeddings,
            "low_freq_factor": s.low_freq_factor,
            "high_freq_factor": s.high_freq_factor,
        },
        "norm_eps": args.norm_eps,
        "bias": bool(ffn.w1.bias is not None),
    }


def check_torchtitan(item: dict) -> dict:
    from torchtitan.components.tokenizer import HuggingFaceTokenizer
    from torchtitan.config import ConfigManager
    from torchtitan.hf_datasets.text_datasets import _validate_dataset

    expect = item["expect"]
    cfg = ConfigManager().parse_args(["--job.config_file", item["path"]])
    _torchtitan_mesh(cfg, expect["n_gpus"])
    layers = _torchtitan_stages(cfg, expect["n_layers"])
    p = cfg.parallelism.pipeline_parallel_degree
    return {
        "tp": cfg.parallelism.tensor_parallel_degree,
        "pp": p,
        "cp": cfg.parallelism.context_parallel_degree,
        "ep": cfg.parallelism.expert_parallel_degree,
        "dp": cfg.parallelism.data_parallel_shard_degree * cfg.parallelism.data_parallel_replicate_degree,
        "global_batch": cfg.training.global_batch_size,
        "interval": cfg.checkpoint.interval,
        "stages": len(layers),
        "busiest_rank_layers": max(sum(layers[rank::p]) for rank in range(p)),
        "dataset_placeholder_raises": _raises(
            lambda: _validate_dataset(cfg.training.dataset, cfg.training.dataset_path)
        ),
        "tokenizer_placeholder_raises": _raises(lambda: HuggingFaceTokenizer(cfg.model.hf_assets_path)),
        "flavor": _torchtitan_flavor(cfg.model.name, cfg.model.flavor),
    }


def _pipeline_engine_zero_check(config) -> str:
    """Run DeepSpeed's PipelineEngine.__init__ on ``config`` past its ZeRO assertion ("" when it passes,
    the assertion text when it trips); the DeepSpeedEngine base is a stub holding the config."""
    import torch
    from deepspeed.runtime.engine import DeepSpeedEngine
    from deepspeed.runtime.pipe.engine import PipelineEngine
    from deepspeed.runtime.pipe.module import PipelineModule

    def base_init(self, *args, **kwargs):
        torch.nn.Module.__init__(self)
        self._config = config
        self.optimizer = None
        self.module = PipelineModule.__new__(PipelineModule)
        torch.nn.Module.__init__(self.module)

    original = DeepSpeedEngine.__init__
    DeepSpeedEngine.__init__ = base_init
    try:
        PipelineEngine()
    except AssertionError as error:
        return str(error) or "AssertionError"
    except AttributeError as error:  # past the assertion: the stub has no process grid
        if "_grid" not in str(error):
            raise
    finally:
        DeepSpeedEngine.__init__ = original
    return ""


def check_deepspeed(item: dict) -> dict:
    import deepspeed.comm as dist
    from deepspeed.runtime.config import DeepSpeedConfig

    expect = item["expect"]
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

    cfg = DeepSpeedConfig(item["path"], mpu=Mpu())
    got = {
        "world_size": cfg.world_size,
        "train_batch_size": cfg.train_batch_size,
        "micro": cfg.train_micro_batch_size_per_gpu,
        "accumulation": cfg.gradient_accumulation_steps,
        "zero_stage": int(cfg.zero_optimization_stage),
        "bf16": cfg.bfloat16_config.enabled,
        "clip": cfg.gradient_clipping,
        "scheduler": cfg.scheduler_name,
        "optimizer": cfg.optimizer_name,
        # the gradient reduction and accumulation dtypes (None: the model's bf16) and AutoTP's degree
        "communication_data_type": str(cfg.communication_data_type),
        "grad_accum_dtype": cfg.grad_accum_dtype,
        "autotp_size": cfg.tensor_parallel_config.autotp_size,
    }
    if expect["pp"] > 1:
        got["pipeline_zero_assertion"] = _pipeline_engine_zero_check(cfg)
        with open(item["path"]) as handle:
            zero3 = json.load(handle)
        zero3["zero_optimization"]["stage"] = 3
        got["pipeline_zero3_assertion"] = _pipeline_engine_zero_check(DeepSpeedConfig(zero3, mpu=Mpu()))
    return got


def check_megatron(item: dict) -> dict:
    import megatron.training.arguments as arguments
    import torch
    from megatron.training.vocab_utils import calculate_padded_vocab_size

    expect = item["expect"]
    # the GPU-generation probes need CUDA, which a CPU check lacks: they answer Hopper (sm90), the plans' GPUs
    arguments.get_device_arch_version = lambda: 9
    torch.cuda.get_device_capability = lambda *args, **kwargs: (9, 0)
    os.environ.update(WORLD_SIZE=str(expect["n_gpus"]), RANK="0", LOCAL_RANK="0")
    os.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
    os.environ.update(item["env"])  # what the script exports
    sys.argv = ["pretrain_gpt.py", *item["argv"]]
    with contextlib.redirect_stdout(io.StringIO()):  # validate_args prints every argument
        args = arguments.parse_args()
        arguments.validate_args(args, {})
        padded = calculate_padded_vocab_size(
            expect["vocab_size"], args.make_vocab_size_divisible_by, args.tensor_model_parallel_size, False
        )
    return {
        "dp": args.data_parallel_size,
        "tp": args.tensor_model_parallel_size,
        "pp": args.pipeline_model_parallel_size,
        "global_batch": args.global_batch_size,
        "padded_vocab": padded,
        "rotary_base": args.rotary_base,
        "use_rope_scaling": args.use_rope_scaling,
        "norm_epsilon": args.layernorm_epsilon,
        "init_method_std": args.init_method_std,
    }


def _versions(megatron: bool) -> dict:
    import torch

    out = {"torch": torch.__version__}
    if megatron:
        import megatron.core

        out["megatron_core"] = getattr(megatron.core, "__version__", "unknown")
    else:
        import deepspeed
        import torchtitan

        out |= {"torchtitan": torchtitan.__version__, "deepspeed": deepspeed.__version__}
    return out


def main(argv: list[str]) -> None:
    megatron = argv[0] == "--megatron"
    if megatron:
        import typing

        if not hasattr(typing, "override"):  # Megatron-LM main needs Python 3.12's typing.override
            typing.override = lambda method: method  # type: ignore[attr-defined]
    print(json.dumps({"versions": _versions(megatron)}), flush=True)
    with open(argv[-1]) as handle:
        manifest = json.load(handle)
    checks = {"torchtitan": check_torchtitan, "deepspeed": check_deepspeed, "megatron": check_megatron}
    # torchtitan first: its checks open and close fake process groups, DeepSpeed's keeps a gloo group open
    order = {"torchtitan": 0, "deepspeed": 1, "megatron": 2}
    for item in sorted(manifest, key=lambda item: order[item["target"]]):
        if (item["target"] == "megatron") != megatron:
            continue
        try:
            got = checks[item["target"]](item)
            print(json.dumps({"path": item["path"], "ok": True, "got": got}), flush=True)
        except BaseException as error:  # report it; the pytest side fails the file
            message = f"{type(error).__name__}: {error}"
            print(json.dumps({"path": item["path"], "ok": False, "error": message}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
