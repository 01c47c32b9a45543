// One candidate configuration and the value an evaluation returns for it.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>
#include <vector>

#include "ppsearch/search/placement.hpp"  // rank placement (docs/topology.md)
#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

// Plain, trivially copyable: rank 0 broadcasts candidates as bytes.
struct Candidate {
  std::int32_t gpus = 0;
  std::int32_t tp = 1, pp = 1, cp = 1, dp = 1;
  std::int32_t vpp = 1;               // model chunks per pipeline rank (1 = not interleaved)
  std::int32_t mbs = 1;               // micro-batch size (sequences)
  std::int32_t num_microbatches = 1;  // per pipeline per step
  std::int32_t global_batch_size = 0;
  Schedule schedule = Schedule::k1F1B;
  Recompute recompute = Recompute::kNone;
  std::uint8_t sp = 0;    // sequence parallelism 0/1
  std::uint8_t zero = 0;  // ZeRO stage 0..3
  // With recompute = full (docs/memory.md "Partial recomputation"): 0 = every layer; N > 0 =
  // the first N layers of each stage (Megatron's --recompute-method block
  // --recompute-num-layers N); −1 = per stage the fewest layers that make it fit.
  std::int32_t recompute_num_layers = 0;
  // Mixture of experts (docs/moe.md): expert-parallel and expert-tensor-parallel degrees (1 for
  // a dense model); the experts fold over the same TP·CP·DP ranks as the attention.
  std::int32_t ep = 1, etp = 1;
  // Rank placement (docs/topology.md): the order of the parallel dimensions over the ranks.
  Placement placement = Placement::kTpCpDpPp;
};

// Total order used as the tie-break everywhere (deterministic ranking).
inline auto candidate_key(const Candidate& c) {
  return std::make_tuple(c.gpus, c.tp, c.pp, c.cp, c.dp, c.vpp, c.mbs, static_cast<int>(c.schedule),
                         static_cast<int>(c.recompute), c.sp, c.zero, c.recompute_num_layers, c.ep,
                         c.etp, static_cast<int>(c.placement));
}
inline bool key_less(const Candidate& a, const Candidate& b) {
  return candidate_key(a) < candidate_key(b);
}

// Why a candidate cannot run. Values are stable (written to HDF5 as an enum).
enum class Infeasible : std::uint8_t {
  kNone = 0,
  kMemory = 1,        // some pipeline rank needs more than the GPU's memory
  kTooFewLayers = 2,  // more (virtual) stages than items to place
  kSchedule = 3,      // schedule cannot be built for this shape
};
inline constexpr int kNumInfeasible = 4;
const char* to_string(Infeasible);

struct StageResult {
  std::int32_t stage = 0;  // 0-based virtual stage
  std::int32_t pipeline_rank = 0;
  std::int32_t first_layer = 0;  // 0 = embedding, 1..L = layers, L+1 = head + loss
  std::int32_t last_layer = 0;   // inclusive
  double time_s = 0;             // forward + backward of one micro-batch
  double memory_gb = 0;          // peak on that pipeline rank
  // What memory_gb is made of on that pipeline rank (docs/memory.md); they sum to memory_gb.
  double weights_gb = 0;      // bf16 weights
  double gradients_gb = 0;    // main gradients
  double optimizer_gb = 0;    // fp32 main weights, Adam m and v (and the fp32 gradient copy)
  double activations_gb = 0;  // stored activations of the in-flight micro-batches at the peak
  double wstate_gb = 0;       // zero-bubble W state (X and dY) held at the peak
  double transient_gb = 0;    // the largest transient of one item (logits, recompute, ZeRO-3)
  double workspace_gb = 0;    // CUDA context, library workspaces, NCCL buffers
  std::int32_t recomputed_layers = 0;  // layers of this stage recomputed in full
};

struct Evaluation {
  bool feasible = false;
  Infeasible reason = Infeasible::kNone;
  // Figures behind a memory failure: which rank, how much it needs, the capacity.
  std::int32_t worst_rank = -1;
  double needed_bytes = 0;
  double capacity_bytes = 0;  // usable: gpu.memory_gb − gpu.memory_headroom_gb
  double headroom_bytes = 0;  // gpu.memory_headroom_gb

  double iteration_time_s = std::numeric_limits<double>::quiet_NaN();
  double mfu = std::numeric_limits<double>::quiet_NaN();
  double hfu = std::numeric_limits<double>::quiet_NaN();
  double tflops_per_gpu = std::numeric_limits<double>::quiet_NaN();
  double tokens_per_s = std::numeric_limits<double>::quiet_NaN();
  double bubble_fraction = std::numeric_limits<double>::quiet_NaN();
  double peak_memory_gb = std::numeric_limits<double>::quiet_NaN();
  // Exposed (not overlapped) time per step on the critical pipeline rank.
  double compute_s = std::numeric_limits<double>::quiet_NaN();
  double tp_comm_s = std::numeric_limits<double>::quiet_NaN();
  double cp_comm_s = std::numeric_limits<double>::quiet_NaN();
  double pp_comm_s = std::numeric_limits<double>::quiet_NaN();
  double dp_comm_s = std::numeric_limits<double>::quiet_NaN();
  // The same per kind with what overlap hides (hidden + exposed), on the same rank.
  double tp_comm_total_s = std::numeric_limits<double>::quiet_NaN();
  double cp_comm_total_s = std::numeric_limits<double>::quiet_NaN();
  double pp_comm_total_s = std::numeric_limits<double>::quiet_NaN();
  double dp_comm_total_s = std::numeric_limits<double>::quiet_NaN();
  std::int32_t critical_rank = -1;  // the pipeline rank those figures are for
  double pipeline_s = std::numeric_limits<double>::quiet_NaN();  // schedule makespan
  double optimizer_s = std::numeric_limits<double>::quiet_NaN();
  std::vector<StageResult> stages;  // one per virtual stage (feasible only)
};

}  // namespace ppsearch
