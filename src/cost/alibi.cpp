// ALiBi position biases on materialised attention scores (docs/step-time.md "ALiBi on
// materialised attention scores").
//
// ALiBi (Press et al. 2022, "Train Short, Test Long: Attention with Linear Biases", ICLR,
// arXiv:2108.12409 §3) adds a fixed per-head linear bias m_h·(j - i) to the query-key scores in
// place of position embeddings. BLOOM was trained with it in Megatron-DeepSpeed
// (bigscience-workshop/bigscience train/tr11-176B-ml/tr11-176B-ml.slurm:
// --position-embedding-type alibi), whose ParallelAttention has no FlashAttention: the scores are
// a [b·np, s_q, s_k] tensor in HBM (bigscience-workshop/Megatron-DeepSpeed
// megatron/model/transformer.py, ParallelAttention.forward):
//
//     matmul_result = alibi[:output_size[0]*output_size[1], :, :output_size[3]]   # [b·np, 1, s_k]
//     matmul_result = torch.baddbmm(matmul_result, query_layer.transpose(0, 1),
//                                   key_layer.transpose(0, 1).transpose(1, 2),
//                                   beta=beta, alpha=(1.0 / self.norm_factor))
//
// with beta = 1 (1/layer_number under apply_query_key_layer_scaling); without ALiBi the same
// code passes an uninitialised torch.empty buffer with beta = 0. PyTorch's baddbmm first
// expands the input to [b·np, s_q, s_k] and copies it into the result when beta != 0
// (pytorch/pytorch aten/src/ATen/native/LinearAlgebra.cpp: TORCH_META_FUNC(baddbmm) calls
// expand_size, common_checks_baddbmm_bmm does "if (beta != 0.0) result.copy_(self)"), then the
// batched GEMM (aten/src/ATen/native/cuda/Blas.cpp baddbmm_out_cuda_impl, cuBLAS bgemm with
// beta) reads that result as its C operand. Per score element of one forward pass: a 2-byte
// write and a 2-byte read (the [b·np, 1, s_k] source is negligible). The bias has no gradient,
// so the backward is unchanged; a full recomputation replays the forward and pays it again
// (items.cpp adds it to the layer's forward, which the replay repeats). The bytes are counted
// exactly, so they move at the fused memory efficiency of the GPU (a copy and a GEMM epilogue,
// not a chain of eager element-wise kernels): cost/items.cpp stack_costed halves
// gpu.memory_efficiency for eager stacks, and that halving is undone here.
#include "ppsearch/cost/alibi.hpp"

#include <algorithm>

#include "ppsearch/cost/items.hpp"

namespace ppsearch {

bool alibi_materialized(const Problem& pb) {
  return pb.model.alibi && pb.training.unfused_attention;
}

double alibi_bias_fwd_s(const Problem& pb, double tokens, double keys, double heads) {
  if (!alibi_materialized(pb) || tokens <= 0 || keys <= 0 || heads <= 0) return 0.0;
  const double eff =
      std::min(1.0, pb.gpu.memory_efficiency *
                        (pb.training.fused_elementwise ? 1.0 : 1.0 / kEagerMemoryEfficiency));
  const double bw = pb.gpu.hbm_bytes_per_s * eff;
  if (bw <= 0) return 0.0;
  return kAlibiBytesPerScore * tokens * keys * heads / bw;
}

}  // namespace ppsearch
