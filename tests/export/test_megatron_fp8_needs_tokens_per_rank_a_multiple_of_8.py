"""TransformerEngine runs an fp8 GEMM only when the input's leading dimensions multiply to a multiple of 8
(``assert_dim_for_fp8_exec``, transformer_engine/pytorch/utils.py @ d0067d0, called on the local input of every
``Linear`` and ``LayerNormLinear`` forward, module/linear.py and module/layernorm_linear.py): under Megatron that
is the micro-batch's tokens on one rank, b·s/c, and b·s/(t·c) with sequence parallelism. A plan whose product is
not a multiple of 8 stops at its first forward pass ("FP8 execution requires the product of all dimensions except
the last to be divisible by 8"), so ``--to megatron`` refuses it at ``training.seq_len`` (exit 2)."""

from tests.export._cli import run_export

PLAN = """schema_version: 1
name: fp8-odd-sequence
model: llama-3.1-8b
budget:
  tokens: 100B
training:
  seq_len: 2052
cluster:
  gpu: h100-sxm
  gpus: 64
parallel:
  tp: 1
  micro_batch: {b}
stack:
  precision: fp8
"""


def _export(tmp_path, b: int):
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN.format(b=b))
    return path, run_export(str(path), "--to", "megatron")


def test_fp8_with_2052_tokens_per_rank_is_refused_at_seq_len(tmp_path):
    path, result = _export(tmp_path, b=1)
    assert result.exit_code == 2
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1, error
    assert f"{path.name}:7: training.seq_len:" in error  # line 7: 'seq_len: 2052'
    # b·s/(t·c) = 1·2052/(1·1) = 2052 = 8·256 + 4; the next seq_len that works for any b is 2056 = 8·257
    assert "2052" in error and "multiple of 8" in error and "2056" in error


def test_fp8_with_two_sequences_per_micro_batch_is_exported(tmp_path):
    _, result = _export(tmp_path, b=2)  # b·s = 2·2052 = 4104 = 8·513
    assert result.exit_code == 0, result.stderr
    assert "--fp8-format" in result.stdout
