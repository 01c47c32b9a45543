#include "ppsearch/search/evaluate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/fsdp_grad.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/moe.hpp"
#include "ppsearch/cost/mtp.hpp"
#include "ppsearch/cost/optimizer_step.hpp"
#include "ppsearch/cost/precision.hpp"
#include "ppsearch/partition/partition.hpp"
#include "ppsearch/partition/relaxed_memo.hpp"
#include "ppsearch/schedule/pipeline_schedule.hpp"
#include "ppsearch/schedule/schedule_order.hpp"
#include "ppsearch/schedule/sim_cache.hpp"
#include "ppsearch/spec/pipeline_layout.hpp"

namespace ppsearch {

const char* to_string(Infeasible r) {
  switch (r) {
    case Infeasible::kNone:
      return "none";
    case Infeasible::kMemory:
      return "memory";
    case Infeasible::kTooFewLayers:
      return "too_few_layers";
    case Infeasible::kSchedule:
      return "schedule";
  }
  return "?";
}

struct Evaluator::Impl {
  const Problem& pb;
  EvalOptions opt;
  Links links;
  double model_flops = 0;  // per step at the training's global batch
  PartitionProblem part;
  PartitionWorkspace part_ws;
  Partition part_ref;  // holds the reference partitioner's result
  ScheduleInput sched;
  SimWorkspace sim_ws;
  ScheduleResult sim;
  std::vector<double> hop_s;          // per virtual-stage boundary
  PartitionProblem part_budget;       // interleaved fallback with per-chunk budgets
  PartialRecompute partial;           // partial recomputation of the current candidate
  std::vector<int> stage_recomputed;  // per stage: layers recomputed (partial recomputation)
  std::vector<double> chunk_need, dev_need;
  // Interleaved memory repair (docs/algorithms.md §1.3 "Memory repair"): the chain walked and
  // the one found, the first chain's simulated peaks, and per device or stage the bounds, the
  // margins, the stage times, the device loads and a move's changes to them.
  std::vector<int> repair_bounds, repair_found;
  std::vector<double> repair_mem0, repair_low, repair_margin, repair_stage_t, repair_load;
  std::vector<double> repair_try, repair_dload, repair_dt, repair_mem, repair_next_mem;
  std::vector<double> repair_pre, repair_suf;
  // Interleaved memory polish (docs/algorithms.md §1.3 "Memory polish"): the chain walked, a
  // move tried, its memory bounds and simulated peaks.
  std::vector<int> polish_bounds, polish_try;
  std::vector<double> polish_low, polish_mem, polish_next_mem, polish_load, polish_margin;
  std::vector<double> polish_stage_t, polish_pre, polish_suf, polish_db, polish_dl, polish_moved;
  // Memo of the time-optimal partition without a memory limit, keyed by what it
  // depends on (stage count, item times, per-stage p2p): consecutive candidates that
  // differ only in ZeRO stage, DP or memory share it.
  // (The last 16 such partitions: candidates a few places apart often repeat one,
  // docs/performance.md "Relaxed partition memo".)
  RelaxedPartitionMemo relaxed_memo;
  std::vector<int> relaxed_bounds;     // the last answer
  double relaxed_tie = 0;              // interleaved: the first chain's limit X
  std::vector<int> stage_device;       // device of each stage, dev_of() (the partitions of
                                       // interleaved / V-shaped schedules take it)
  std::vector<const ItemCost*> items;  // item(i) of the current candidate, for place()
  std::vector<int> chain_bounds;       // interleaved: the candidate chain being simulated
  std::vector<int> fixed_layouts;      // interleaved: Megatron's layouts (megatron_layouts())
  // Memo of recent schedule simulations, keyed by their whole input (docs/performance.md
  // "Simulation memo").
  SimulationCache sim_cache;
  std::vector<int> bounds;
  // Per device accumulators.
  std::vector<double> dev_static, dev_transient, dev_params, dev_compute, dev_tp, dev_cp,
      dev_window, dev_mem, dev_finish, dev_dp_exposed, dev_dp_total, dev_weight, dev_grad,
      dev_optim, dev_step;
  // Step time (docs/step-time.md): ZeRO-2/3 last reduce-scatter, forward per micro-batch, and
  // the ZeRO-2/3 charges inside the micro-batches (per step).
  std::vector<double> dev_last_rs, dev_fwd, dev_dp_inline;
  // FP8 delayed scaling's amax all-reduces per virtual stage with layers, per micro-batch
  // (cost/precision.hpp amax_reduction_time); 0 otherwise.
  AmaxReduction amax;
  // Interleaved chain choice: what place() left for the best chain so far, swapped out so that
  // the winner need not be placed and simulated again (docs/performance.md "Chain choice
  // speed"). Every vector that place() writes must be listed in swap_placed().
  std::vector<double> best_dev[19];
  ScheduleInput best_sched;
  ScheduleResult best_sim;
  void swap_placed() {
    std::vector<double>* cur[19] = {&dev_static, &dev_transient,  &dev_params,   &dev_compute,
                                    &dev_tp,     &dev_cp,         &dev_window,   &dev_mem,
                                    &dev_finish, &dev_dp_exposed, &dev_dp_total, &dev_weight,
                                    &dev_grad,   &dev_optim,      &dev_step,     &dev_last_rs,
                                    &dev_fwd,    &dev_dp_inline,  &dev_expert};
    for (int k = 0; k < 19; ++k) cur[k]->swap(best_dev[k]);
    std::swap(sched, best_sched);
    std::swap(sim, best_sim);
  }
  EvalBreakdown bd;  // EvalOptions::want_breakdown only
  // The problem the item costs see: the stack's attention generation and element-wise fusion
  // folded into the GPU constants (docs/step-time.md "Software stacks").
  Problem eff;
  // Mixture of experts / MLA (docs/moe.md): layers 1..n_dense are ChainCosts::layer, the rest
  // it_moe; dev_expert sums the expert parameters per device (reduced over expert-DP).
  bool moe = false;
  int n_dense = 0;
  Problem attn_pb;
  ItemCost it_moe;
  std::vector<double> dev_expert;
  // A fixed pipeline layout (search.pp_layout, docs/memory.md "A fixed pipeline layout"): its
  // stage bounds, read once; empty = the partitioner decides.
  std::vector<int> fixed_bounds;
  // FSDP's gradient passes per parameter (training.fsdp_impl, cost/fsdp_grad.hpp), read once.
  double fsdp_pass_bytes = 0;

  Impl(const Problem& p, EvalOptions o)
      : pb(p),
        opt(o),
        links(effective_links(p.cluster)),
        relaxed_memo(o.memo ? RelaxedPartitionMemo::kDefaultCapacity : 0),
        sim_cache(o.memo ? SimulationCache::kDefaultCapacity : 0),
        eff(stack_costed(p)),
        moe(is_moe(p.model) || is_mla(p.model) || has_attention_window(p.model)),
        n_dense(dense_layer_count(p.model)),
        fsdp_pass_bytes(fsdp_grad_pass_bytes(p.training)) {
    if (moe) attn_pb = attention_only_problem(eff);
    std::string why;  // check() refuses a layout that does not parse
    if (!p.search.pp_layout.empty() &&
        !parse_pipeline_layout(p.search.pp_layout, p.model.layers, p.model.mtp_layers,
                               &fixed_bounds, &why))
      fixed_bounds.clear();
  }
};

Evaluator::Evaluator(const Problem& problem, EvalOptions options)
    : impl_(std::make_unique<Impl>(problem, options)) {}
Evaluator::~Evaluator() = default;
Evaluator::Evaluator(Evaluator&&) noexcept = default;
const EvalBreakdown& Evaluator::breakdown() const { return impl_->bd; }

namespace {

// Interleaved memory repair (docs/algorithms.md §1.3 "Memory repair"): the moves simulated per
// step, and the most steps (items moved).
constexpr int kRepairWidth = 2;
constexpr int kRepairSteps = 8;
// Interleaved memory polish (docs/algorithms.md §1.3 "Memory polish"): the moves simulated per
// step, and the most steps.
constexpr int kPolishWidth = 3;
constexpr int kPolishSteps = 4;

// The memory repair's and polish's move on a chain's stage bounds: passes one item from stage
// `from` to stage `to`, every stage in between giving one item on and taking one;
// pass_item(b, to, from) undoes pass_item(b, from, to).
void pass_item(std::vector<int>& b, int from, int to) {
  if (to > from) {
    for (int k = from + 1; k <= to; ++k) --b[k];
  } else {
    for (int k = to + 1; k <= from; ++k) ++b[k];
  }
}

// Inserts `mv` into the best-first list top[0..n) of at most `width` entries, after every entry
// it does not beat (`better(x, y)`: x ranks before y), so an earlier entry wins a tie.
template <class Move, class Better>
void keep_best(Move* top, int& n, int width, const Move& mv, Better better) {
  int pos = n;
  while (pos > 0 && better(mv, top[pos - 1])) --pos;
  if (pos >= width) return;
  // (k > 0 is implied by k > pos; spelled out for g++'s -Warray-bounds at width 1)
  for (int k = std::min(n, width - 1); k > pos && k > 0; --k) top[k] = top[k - 1];
  top[pos] = mv;
  n = std::min(n + 1, width);
}

void set_infeasible(Evaluation* e, Infeasible why) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  e->feasible = false;
  e->reason = why;
  e->iteration_time_s = e->mfu = e->hfu = e->tflops_per_gpu = e->tokens_per_s = nan;
  e->bubble_fraction = e->peak_memory_gb = e->compute_s = e->tp_comm_s = e->cp_comm_s = nan;
  e->pp_comm_s = e->dp_comm_s = e->pipeline_s = e->optimizer_s = nan;
  e->tp_comm_total_s = e->cp_comm_total_s = e->pp_comm_total_s = e->dp_comm_total_s = nan;
  e->critical_rank = -1;
  e->stages.clear();
}

// Per-stage in-flight micro-batches k_σ (docs/algorithms.md §1.1 "How memory enters",
// §2.1 table, §4.3). `stage` is the virtual stage, chunk = stage / P, rank = stage mod P.
double in_flight(Schedule s, int stage, int P, int v, int M, double wkeep_ratio) {
  const int sigma = stage % P;
  switch (s) {
    case Schedule::kGPipe:
      return M;
    case Schedule::k1F1B:
      return std::min(P - sigma, M);
    case Schedule::kInterleaved1F1B: {
      // Rank r runs W = (v−1)P + 2(P−r−1) + 1 chunk forwards before its first backward
      // (SC21 §2.2.2; Megatron's interleaved warm-up, schedules.py), the peak of its
      // activations. Forward k belongs to chunk (k mod Pv) div P (Megatron's
      // get_model_chunk_id), so chunk c holds full·P + clamp(rem − cP, 0, P) of them,
      // at most M. The device peak itself comes from the simulated op order (place()).
      const int c = stage / P;
      const long long W =
          std::min<long long>((v - 1LL) * P + 2LL * (P - sigma - 1) + 1, 1LL * M * v);
      const long long full = W / (1LL * P * v), rem = W % (1LL * P * v);
      const long long mine = full * P + std::clamp<long long>(rem - 1LL * c * P, 0, P);
      return double(std::min<long long>(mine, M));
    }
    case Schedule::kZBH1:
      // (P−σ) full micro-batches + σ holding only the W state (§2.1, §4.3).
      return std::min(P - sigma, M) + std::min(sigma, M) * wkeep_ratio;
    case Schedule::kZBV: {
      // ZB-V: device d's chunk-0 stage holds at most 2P−1−d chunk activations, its chunk-1
      // stage d+1 (2P in all, 1F1B's peak; the generator's per-stage rule, schedule_order.cpp).
      // The device peak itself comes from the simulated op order (place()).
      const int d = stage_device(ScheduleKind::kZBV, P, stage);
      return std::min(stage < P ? 2 * P - 1 - d : d + 1, M);
    }
    case Schedule::kDualPipe:
      // DualPipe: PP+1 micro-batches' activations per device over its two stages (DeepSeek-V3
      // report §3.2.1, Table 2); the partitioner sees one stage standing for the device.
      return std::min(P + 1, M);
    case Schedule::kZBH2:
      // ZB-H2 (Zero Bubble ICLR'24 §2.2): 2(P−σ)−1 warm-up forwards in flight, plus the W
      // states of the at most 2σ deferred Ws (schedule_order.cpp); stage 0: (2P−1)·M_B.
      return std::min(2 * (P - sigma) - 1, M) + std::min(2 * sigma, M) * wkeep_ratio;
  }
  return M;
}

// Non-GEMM kernels of one transformer layer per micro-batch (docs/step-time.md "Kernel
// overhead"): fused forward = 2 norms, RoPE, attention, activation, 2 residual adds; backward
// about twice that minus the adds folded into the GEMM epilogues. Eager PyTorch splits the norm
// (square, mean, rsqrt, 2 multiplies), RoPE (slices, multiplies, add, concat) and SwiGLU
// (SiLU, multiply) into their elementary kernels.
constexpr double kLayerKernelsFwdFused = 7, kLayerKernelsBwdFused = 12;
constexpr double kLayerKernelsFwdEager = 18, kLayerKernelsBwdEager = 36;

// An item's kind in the per-kind ZeRO-2/3 tables of evaluate(): 0 the embedding, 1 a dense layer
// (items 1..n_dense), 2 the head (the last item), 3 a MoE layer.
int item_kind(long long i, long long n_items, long long n_dense) {
  return i == 0 ? 0 : (i == n_items - 1 ? 2 : (i <= n_dense ? 1 : 3));
}

// Whether virtual stage s (items bounds[s] .. bounds[s+1]−1) holds a transformer layer (items
// 1..n_items−2): a stage of the embedding or the output layer alone has no FP8 module and pays
// no amax reduction (docs/precision.md "Amax reductions").
bool stage_has_layers(const std::vector<int>& bounds, int s, long long n_items) {
  return std::min<long long>(bounds[s + 1], n_items - 1) > std::max<long long>(bounds[s], 1);
}

// Copies what lies behind a feasible evaluation into I.bd (EvalOptions::want_breakdown only;
// never on the search's path).
void fill_breakdown(Evaluator::Impl& I, const ChainCosts& cc, const std::vector<int>& bounds,
                    int crit, double tied_s, double gradnorm_s, double param_gather_exposed,
                    double optimizer_s, double straggler_s, const double* grad_pass_item) {
  EvalBreakdown& b = I.bd;
  const int P = I.sched.devices;
  // DualPipe's simulator input mirrors the P stages into 2P (place()); the partition has P.
  const bool dual = I.sched.kind == ScheduleKind::kDualPipe;
  const int S = dual ? P : P * I.sched.chunks;
  const long long n_items = I.pb.model.layers + 2LL;
  b.valid = true;
  b.schedule = I.sched;
  b.critical_rank = crit;
  b.capacity_bytes = cc.capacity_bytes;
  b.reserve_bytes = cc.extra_bytes;
  b.static_bytes = I.dev_static;
  b.activation_bytes = I.sim.peak_act_bytes;
  b.transient_bytes = I.dev_transient;
  b.memory_bytes = I.dev_mem;
  b.compute_s = I.dev_compute;
  b.tp_exposed_s = I.dev_tp;
  b.cp_exposed_s = I.dev_cp;
  b.tp_total_s.assign(P, 0.0);
  b.cp_total_s.assign(P, 0.0);
  b.p2p_s.assign(P, 0.0);
  b.fsdp_passes_s.assign(P, 0.0);
  b.amax_s.assign(P, 0.0);
  for (int s = 0; s < S; ++s) {
    const int d = stage_device(I.sched.kind, P, s);
    for (int i = bounds[s]; i < bounds[s + 1]; ++i) {
      const ItemCost& it =
          i == 0 ? cc.embed : (i == n_items - 1 ? cc.head : (i <= I.n_dense ? cc.layer : I.it_moe));
      b.tp_total_s[d] += it.tp_total_s;
      b.cp_total_s[d] += it.cp_total_s;
      b.fsdp_passes_s[d] += grad_pass_item[item_kind(i, n_items, I.n_dense)];
    }
    if (s + 1 < S) b.p2p_s[d] += I.hop_s[s];  // activation to vs+1
    if (s > 0) b.p2p_s[d] += I.hop_s[s - 1];  // input gradient back to vs−1
    if (stage_has_layers(bounds, s, n_items)) {
      // DualPipe: the stage runs half of the micro-batches on d and half mirrored on P−1−s.
      const double a = I.amax.fwd_s + I.amax.bwd_s;
      b.amax_s[d] += dual ? 0.5 * a : a;
      if (dual) b.amax_s[P - 1 - s] += 0.5 * a;
    }
  }
  b.busy_s = I.sim.busy_s;
  b.grad_end_s = I.sim.last_grad_end_s;
  b.dp_total_s = I.dev_dp_total;
  b.dp_exposed_s = I.dev_dp_exposed;
  b.param_gather_exposed_s = param_gather_exposed;
  b.tied_embedding_s = tied_s;
  b.grad_norm_s = gradnorm_s;
  b.optimizer_s = optimizer_s;
  b.step_overhead_s = I.pb.training.step_overhead_s;
  b.straggler_s = straggler_s;
  b.deferred_wgrad_s = cc.head_deferred_wgrad_s;
  b.deferred_wgrad_rank = cc.head_deferred_wgrad_s > 0 ? stage_device(I.sched.kind, P, S - 1) : -1;
}

// Mixture of experts / MLA (docs/moe.md): the dense layers get MLA's projections, the MoE
// layers are costed by cost/moe.cpp, and each expert communicator a rank joins (EP, ETP,
// expert-DP) adds its NCCL buffers.
void moe_chain(Evaluator::Impl& I, const Candidate& c, ChainCosts* cc) {
  const bool moe = is_moe(I.pb.model);
  // The stack-costed problem, as the dense chain's (cost/items.hpp stack_costed): the expert
  // GEMMs, MLA's projections and the windowed layers' cut run at the same rates as the rest.
  const MoeItems mi = moe_items(I.eff, c, I.links, cc->layer,
                                moe ? chain_costs(I.attn_pb, c, I.links).layer : cc->layer);
  cc->layer = mi.dense_layer;
  I.it_moe = mi.moe_layer;
  if (moe)
    cc->extra_bytes += ((c.ep > 1) + (c.etp > 1) + (expert_dp(c) > 1)) * I.pb.gpu.comm_buffer_bytes;
}

// FSDP (ZeRO-3) with PP as torchtitan runs it: torch.distributed.pipelining's stage calls
// set_requires_gradient_sync(False) before every backward but the last micro-batch's
// (pipelining/stage.py, backward_maybe_with_nosync), so a stage holds its gradients unsharded
// for the whole step and reduce-scatters them once (docs/moe.md "FSDP with TP and PP").
void fsdp_pp_gradients(Evaluator::Impl& I, const Candidate& c, ChainCosts* cc) {
  const double dr = double(c.dp) * c.cp;
  const double edp = expert_dp(c);
  const double g = I.pb.training.grad_reduce_in_fp32 ? 4.0 : 2.0;
  auto fix = [&](ItemCost& it) {
    const double add = it.params * g * (1.0 - 1.0 / dr) + it.expert_params * g * (1.0 - 1.0 / edp);
    it.grad_bytes += add;
    it.static_bytes += add;
  };
  fix(cc->embed);
  fix(cc->layer);
  fix(cc->head);
  if (I.moe) fix(I.it_moe);
}

}  // namespace

double overlap_charge(double comm_s, double compute_s, double contention) {
  if (comm_s <= 0) return 0.0;
  // Compute runs at (1 − ρ) of its speed while the collective runs beside it. If the
  // collective outlasts the slowed compute (comm ≥ compute / (1 − ρ)) the step grows by
  // comm − compute; otherwise all of it hides and the compute is late by ρ·comm
  // (docs/step-time.md "Overlap charge"). The two branches meet at comm = compute / (1 − ρ).
  return std::max(comm_s - compute_s, contention * comm_s);
}

void Evaluator::evaluate(const Candidate& c, Evaluation* out) {
  Impl& I = *impl_;
  const Problem& pb = I.pb;
  Evaluation& e = *out;
  e.worst_rank = -1;
  e.needed_bytes = 0;
  e.headroom_bytes = pb.gpu.memory_headroom_bytes;
  e.capacity_bytes = pb.gpu.usable_memory_bytes() - pb.gpu.memory_headroom_bytes;
  I.bd.valid = false;

  const int P = c.pp, v = c.vpp, M = c.num_microbatches;
  const int S = P * v;  // virtual stages
  // 64-bit: model.layers may be INT_MAX in a Problem built in code.
  const long long n_items = pb.model.layers + 2LL;
  if (S > n_items) {
    set_infeasible(&e, Infeasible::kTooFewLayers);
    return;
  }
  if (c.schedule == Schedule::kInterleaved1F1B && (M % P != 0 || P < 2)) {
    set_infeasible(&e, Infeasible::kSchedule);
    return;
  }
  // ZB-V holds 2 chunks per rank; DualPipe (P > 1) needs an even P and an even M >= 2P
  // (deepseek-ai/DualPipe); with P = 1 it is plain 1F1B (all schedules coincide).
  const bool dual = c.schedule == Schedule::kDualPipe && P > 1;
  if ((c.schedule == Schedule::kZBV && v != 2) ||
      (c.schedule == Schedule::kDualPipe &&
       (v != 1 || (dual && (P % 2 != 0 || M % 2 != 0 || M < 2 * P))))) {
    set_infeasible(&e, Infeasible::kSchedule);
    return;
  }
  // Device of virtual stage s: s mod P, or the V of ZB-V (schedule_order.hpp). DualPipe's stage
  // s also has a copy on device P−1−s (place()).
  const auto dev_of = [&](int s) {
    return c.schedule == Schedule::kZBV ? stage_device(ScheduleKind::kZBV, P, s) : s % P;
  };

  // Partial recomputation (docs/memory.md): the items are costed without recomputation and
  // each stage adds what recomputing r of its layers changes, r chosen by the partitioner.
  const bool partial = c.recompute == Recompute::kFull && c.recompute_num_layers != 0 && v == 1 &&
                       !dual;  // DualPipe's mirrored stages recompute every layer
  Candidate base_c = c;
  if (partial) base_c.recompute = Recompute::kNone;
  const double rho = pb.gpu.comm_contention;
  const double dr = double(c.dp) * c.cp;
  const int ndom = pb.cluster.nvlink_domain_size;
  const GroupShape dp_group = group_shape(dp_cp_layout(c), I.links.fabric);  // docs/topology.md
  // Per-layer step-time terms (docs/step-time.md): the TP overlap charge and the per-kernel
  // overhead, applied to a layer's costs (also to the fully recomputed layer of partial
  // recomputation, so that the difference stays consistent).
  auto adjust_layer = [&](ItemCost& L, const Candidate& cand) {
    if (pb.training.tp_comm_overlap && cand.tp > 1 && cand.sp) {
      // TE userbuffers pipeline each TP all-gather / reduce-scatter with the GEMM that
      // consumes / produces it, in TP chunks (ring exchange: one chunk per TP rank): the first
      // chunk of an all-gather and the last of a reduce-scatter have no GEMM beside them, the
      // rest is charged against the pass's GEMMs (per layer and pass). Only with sequence
      // parallelism: Megatron-LM refuses --tp-comm-overlap without it (arguments.py @d98e8a64,
      // "Tensor parallel communication/GEMM overlap can happen only when sequence parallelism
      // is enabled"), and torchtitan's async TP pipelines the all-gather / reduce-scatter pairs
      // that only sequence parallelism has; without it the all-reduces stay exposed.
      const double piece = 1.0 / cand.tp;
      auto charge = [&](double comm, double gemm) {
        return piece * comm + overlap_charge((1.0 - piece) * comm, gemm, rho);
      };
      const double f = charge(L.tp_fwd_total_s, L.gemm_fwd_s);
      const double b = charge(L.tp_bwd_total_s, L.gemm_bwd_s);
      L.fwd_s += f - L.tp_fwd_s;
      L.bwd_s += b - L.tp_bwd_s;
      L.tp_comm_s = f + b;
      L.tp_fwd_s = f;
      L.tp_bwd_s = b;
    }
    const bool fused = pb.training.fused_elementwise;
    const double kf =
        pb.gpu.kernel_overhead_s * (fused ? kLayerKernelsFwdFused : kLayerKernelsFwdEager);
    const double kb =
        pb.gpu.kernel_overhead_s * (fused ? kLayerKernelsBwdFused : kLayerKernelsBwdEager);
    const double kr = cand.recompute == Recompute::kFull ? kf : 0.0;
    L.fwd_s += kf;
    L.bwd_s += kb + kr;
    L.compute_s += kf + kb + kr;
  };
  // FSDP with PP (torchtitan, docs/moe.md): ZeRO-2 = reshard_after_forward never keeps the
  // parameters and, with pipelining deferring the gradient sync to the last backward, unsharded
  // gradients for the whole step, so it costs as ZeRO-1 (memory and traffic).
  const bool fsdp_pp = c.zero >= 2 && P > 1;
  if (fsdp_pp && c.zero == 2) base_c.zero = 1;
  ChainCosts cc = chain_costs(I.eff, base_c, I.links);
  if (I.moe) moe_chain(I, base_c, &cc);
  // The per-layer terms apply to the dense layers; a MoE layer keeps the costs of cost/moe.cpp.
  adjust_layer(cc.layer, base_c);
  // Multi-token prediction (docs/moe.md "MTP"): its modules, each a block like the last layer,
  // join the last item (Megatron-Core places them on the last pipeline stage).
  add_mtp(I.eff, base_c, I.links, pb.model.layers > I.n_dense ? I.it_moe : cc.layer, &cc);
  if (fsdp_pp && c.zero == 3) fsdp_pp_gradients(I, c, &cc);
  const ItemCost& moe_layer = I.it_moe;
  PartialRecompute& prc = I.partial;
  ItemCost delta;  // one layer recomputed in full minus the same layer without recomputation
  I.stage_recomputed.assign(S, 0);
  if (partial) {
    Candidate full_c = base_c;
    full_c.recompute = Recompute::kFull;
    full_c.recompute_num_layers = 0;
    // MoE: the MoE layer's difference stands for every layer (docs/moe.md).
    const ItemCost& cur = I.moe ? moe_layer : cc.layer;
    ItemCost full_layer =
        I.moe ? moe_items(I.eff, full_c, I.links, chain_costs(I.eff, full_c, I.links).layer,
                          chain_costs(I.attn_pb, full_c, I.links).layer)
                    .moe_layer
              : chain_costs(I.eff, full_c, I.links).layer;
    if (!I.moe) adjust_layer(full_layer, full_c);
    delta.bwd_s = full_layer.bwd_s - cur.bwd_s;
    delta.compute_s = full_layer.compute_s - cur.compute_s;
    delta.tp_comm_s = full_layer.tp_comm_s - cur.tp_comm_s;
    delta.cp_comm_s = full_layer.cp_comm_s - cur.cp_comm_s;
    delta.act_bytes = cur.act_bytes - full_layer.act_bytes;
    delta.transient_bytes = full_layer.transient_bytes;
    prc.recomputable.assign(static_cast<std::size_t>(n_items), 1);
    prc.recomputable.front() = prc.recomputable.back() = 0;  // embedding, head
    prc.save_bytes = delta.act_bytes;
    prc.extra_time_s = delta.bwd_s;
    prc.transient_bytes = delta.transient_bytes;
    prc.per_stage = c.recompute_num_layers;
  }
  const double cap = cc.capacity_bytes;

  // ---- p2p hop times between consecutive virtual stages (§5.4) ------------------
  // Pipeline rank p of pipeline 0 sits at global rank p·stride (TP, CP, DP inner under
  // Megatron's placement; TP, CP inner under tp-cp-pp-dp: cost/fabric.hpp).
  const long long stride = group_strides(c).pp;
  I.hop_s.assign(std::max(0, S - 1), 0.0);
  for (int vs = 0; vs + 1 < S; ++vs) {
    const long long ra = dev_of(vs) * stride, rb = dev_of(vs + 1) * stride;
    if (ra == rb) continue;
    I.hop_s[vs] = p2p_time(cc.boundary_bytes, ra, rb, c.gpus, I.links);
  }
  // FP8 delayed scaling: one amax all-reduce after each chunk's forward and one after its
  // backward, over the stage's TP×CP×DP ranks (docs/precision.md "Amax reductions"); the message
  // is sized for the mean chunk (latency-bound).
  I.amax = amax_reduction_time(pb, c, I.links, double(pb.model.layers) / std::max(1, S));
  // Interleaved schedules with the stack's p2p overlap send and receive asynchronously
  // (Megatron overlap_p2p_comm); otherwise cluster.p2p says (docs/step-time.md).
  const bool blocking = pb.cluster.p2p_blocking &&
                        !(c.schedule == Schedule::kInterleaved1F1B && pb.training.p2p_overlap);

  // ---- Partition problem ------------------------------------------------------------
  PartitionProblem& pp = I.part;
  pp.stages = S;
  pp.time_s.resize(n_items);
  pp.static_bytes.resize(n_items);
  pp.act_bytes.resize(n_items);
  pp.transient_bytes.resize(n_items);
  auto item = [&](int i) -> const ItemCost& {
    return i == 0 ? cc.embed
                  : (i == n_items - 1 ? cc.head : (i <= I.n_dense ? cc.layer : moe_layer));
  };
  I.items.resize(n_items);
  for (int i = 0; i < n_items; ++i) {
    const ItemCost& it = item(i);
    I.items[i] = &it;
    pp.time_s[i] = it.time_s();
    pp.static_bytes[i] = dual ? 2 * it.static_bytes : it.static_bytes;  // DualPipe: 2 copies
    pp.act_bytes[i] = it.act_bytes;
    pp.transient_bytes[i] = it.transient_bytes;
  }
  const double wkeep_ratio = cc.layer.act_bytes > 0 ? cc.layer.wkeep_bytes / cc.layer.act_bytes : 0;
  pp.in_flight.resize(S);
  pp.extra_bytes.resize(S);
  pp.comm_s.resize(S);
  for (int s = 0; s < S; ++s) {
    pp.in_flight[s] = in_flight(c.schedule, s, P, v, M, wkeep_ratio);
    // Interleaved: each of a device's v chunks gets 1/v of the device (heuristic).
    pp.extra_bytes[s] = cc.extra_bytes / v;
    double cs = 0;
    if (blocking) {  // the sender is busy for each activation / gradient it sends (§2.3)
      if (s + 1 < S) cs += I.hop_s[s];
      if (s > 0) cs += I.hop_s[s - 1];
    }
    pp.comm_s[s] = cs;
  }
  pp.capacity_bytes = cap / v;

  // The partition choice (docs/performance.md "Noise-robust partition choice"): with one stage
  // per device the latest-cut partition within B*·(1 + 1e-9) of the exact optimum B*
  // (partition_robust(), so that last-bit noise in the item times cannot pick among tied
  // partitions); with a device's v chunks (interleaved, ZB-V) that chain with the largest device
  // load lowered (partition_interleaved(); docs/algorithms.md §1.3 "Interleaved / V-shaped
  // schedules": a device's time per micro-batch is the sum of its chunks, Narayanan et al.,
  // SC'21 §2.2). The reference option computes the same choice with the O(L²·S) DP.
  // (Filled for every schedule: place() reads it.)
  I.stage_device.resize(S);
  for (int s = 0; s < S; ++s) I.stage_device[s] = dev_of(s);
  const int layout = v == 1 ? 0 : (c.schedule == Schedule::kZBV ? -P : P);
  auto choose = [&](const PartitionProblem& prob, double first_limit) -> const Partition& {
    const bool ref = I.opt.reference_partitioner;
    if (v == 1) return partition_robust(prob, I.part_ws, ref, first_limit);
    return partition_interleaved(prob, I.stage_device, I.part_ws, ref, first_limit);
  };
  auto run_partitioner = [&](const PartitionProblem& prob) -> const Partition& {
    return choose(prob, 0.0);
  };

  // The time-optimal partition with no memory limit. With infinite capacity the
  // memory arrays play no part, so it depends only on S, the item times and c_σ.
  // Interleaved / V-shaped: `all_chains` = false asks for the first chain only (the others
  // are computed when a later call asks for them, docs/performance.md "Candidates on demand").
  auto relaxed_bounds = [&](bool all_chains) -> const std::vector<int>& {
    const bool memo = !I.opt.reference_partitioner;
    // The problem itself with an infinite capacity for the time of the call (no copy).
    PartitionProblem& relaxed = pp;
    struct Restore {
      PartitionProblem& p;
      double capacity;
      ~Restore() { p.capacity_bytes = capacity; }
    } restore{pp, pp.capacity_bytes};
    relaxed.capacity_bytes = std::numeric_limits<double>::infinity();
    const std::size_t width = static_cast<std::size_t>(S) + 1;
    // The balanced and the earliest-cut chains after the first one (limit I.relaxed_tie).
    auto more_chains = [&]() {
      if (!interleaved_more_candidates(relaxed, I.stage_device, I.part_ws, I.relaxed_bounds,
                                       I.relaxed_tie, I.opt.reference_partitioner)) {
        throw std::logic_error("evaluate: no chunk chain without a memory limit");
      }
    };
    if (memo) {
      if (const std::vector<int>* hit = I.relaxed_memo.find(pp, layout, &I.relaxed_tie)) {
        I.relaxed_bounds = *hit;
        if (v > 1 && all_chains && I.relaxed_bounds.size() == width) {
          more_chains();
          I.relaxed_memo.update(pp, I.relaxed_bounds, layout);
        }
        return I.relaxed_bounds;
      }
    }
    double first_limit = 0.0;
    if (!I.opt.reference_partitioner) {
      // The previous time-optimal cuts, evaluated on this problem, bound its optimum from
      // above: a first limit that usually saves a pass (docs/performance.md).
      // One workspace with the memory-aware DP: the items are the same, so their prefix sums
      // are built once per candidate.
      std::vector<int>& prev_cuts = I.chain_bounds;
      prev_cuts.assign(
          I.relaxed_bounds.begin(),
          I.relaxed_bounds.begin() + std::min<std::size_t>(I.relaxed_bounds.size(), S + 1));
      const Partition& prev = evaluate_partition(relaxed, prev_cuts, I.part_ws);
      first_limit = prev.feasible ? prev.bottleneck_s : 0.0;
    }
    if (v == 1) {
      I.relaxed_bounds = choose(relaxed, first_limit).bounds;
    } else {
      // Interleaved / V-shaped: three candidate chunk chains, one after another (S + 1 cuts
      // each): the latest-cut chain within the tolerance of the optimal chunk bottleneck, as
      // it is and device-balanced, and the earliest-cut one (interleaved_candidates(), here in
      // its two steps). The evaluator simulates them and keeps the fastest that fits.
      if (!interleaved_first_candidate(relaxed, I.stage_device, I.part_ws, I.relaxed_bounds,
                                       &I.relaxed_tie, I.opt.reference_partitioner, first_limit)) {
        throw std::logic_error("evaluate: no chunk chain without a memory limit");
      }
      if (all_chains) more_chains();
    }
    if (memo) I.relaxed_memo.insert(pp, I.relaxed_bounds, layout, I.relaxed_tie);
    return I.relaxed_bounds;
  };

  // Places the items by `bounds`, simulates the schedule and fills the per-device
  // totals; returns the highest per-device memory (from the simulated op order,
  // §4.3, §4.6) in *peak and its rank in *peak_rank. False if the schedule fails.
  // ---- ZeRO-2/3 traffic per stage and micro-batch (docs/step-time.md "ZeRO-2/3") ---------
  // Per item: the all-gather of its bf16 weights (ZeRO-3) and the reduce-scatter of its
  // gradients (ZeRO-2/3), in the main-gradient dtype; FSDP and Megatron's distributed
  // optimizer chunk DP traffic by layer (NeMo docs, "Communication Overlap").
  const TrainingSpec& trn = pb.training;
  const double grad_elem = trn.grad_reduce_in_fp32 ? 4.0 : 2.0;
  // Gradients reduce-scattered every micro-batch (ZeRO-2/3; not with PP, where pipelining defers
  // the sync to the last backward, fsdp_pp_gradients) and weights gathered per micro-batch.
  const bool shard_grads = base_c.zero >= 2 && dr > 1 && !fsdp_pp;
  const bool shard_params = c.zero >= 3 && dr > 1;
  // MoE: expert gradients reduce over the expert-DP group, its members etp·ep ranks apart
  // (Megatron-Core expert order tp-ep-dp-pp, parallel_state.py); docs/moe.md.
  const double edp = expert_dp(c);
  const GroupShape edp_group = group_shape(static_cast<int>(edp), c.ep * c.etp, ndom);
  // By item kind: embedding, dense layer, head, MoE layer (item_kind).
  double ag_item[4] = {0, 0, 0, 0}, rs_item[4] = {0, 0, 0, 0};
  // FSDP's element-wise passes over each unit's unsharded gradient before its reduce-scatter
  // (training.fsdp_impl, cost/fsdp_grad.cpp; docs/step-time.md "FSDP's gradient passes and
  // early-stopping recomputation"), per micro-batch where the gradients are reduce-scattered every
  // micro-batch. They run on FSDP's reduce stream beside the next unit's backward, but as
  // memory-bound kernels over the whole grid they take the SMs the GEMMs would use: charged in full
  // to the stage's backward.
  double grad_pass_item[4] = {0, 0, 0, 0};
  if (shard_grads || shard_params) {
    const ItemCost* its[4] = {&cc.embed, &cc.layer, &cc.head, &I.it_moe};
    const double pass_bytes = shard_grads ? I.fsdp_pass_bytes : 0.0;
    const double hbm = pb.gpu.hbm_bytes_per_s * pb.gpu.memory_efficiency;
    // A MoE layer's routed experts are sharded over the expert-DP group (cost/moe.cpp holds
    // their ZeRO-3 shards and gathered copies so), its router, shared experts and attention over
    // DP·CP (torchtitan apply_fsdp: the experts fully_shard'ed on dp_mod_ep_mesh, the block on
    // the DP mesh, both prefetched together): under ZeRO-2/3 both are reduce-scattered, and
    // under ZeRO-3 gathered, every micro-batch, one after the other on the same stream
    // (docs/moe.md "Expert parameters under ZeRO-2/3").
    const int kinds = I.pb.model.layers > I.n_dense ? 4 : 3;
    for (int k = 0; k < kinds; ++k) {
      const double phi = its[k]->params;
      const double phi_e = edp > 1 ? its[k]->expert_params : 0.0;
      if (pass_bytes > 0) grad_pass_item[k] = pass_bytes * (phi + phi_e) / hbm;
      rs_item[k] = collective_time(Collective::kReduceScatter, grad_elem * phi, dp_group, I.links);
      if (phi_e > 0)
        rs_item[k] +=
            collective_time(Collective::kReduceScatter, grad_elem * phi_e, edp_group, I.links);
      if (shard_params) {
        ag_item[k] = collective_time(Collective::kAllGather, 2.0 * phi, dp_group, I.links);
        if (phi_e > 0)
          ag_item[k] += collective_time(Collective::kAllGather, 2.0 * phi_e, edp_group, I.links);
      }
    }
  }
  auto kind_of = [&](long long i) { return item_kind(i, n_items, I.n_dense); };

  ScheduleInput& si = I.sched;
  const ItemCost* const* item_at = I.items.data();  // item(i), looked up
  // place(): simulate a layout's memory before its times (the fast path only).
  const bool may_memory_first = I.opt.memory_first && !I.opt.full_simulation;
  bool memory_first = false;
  auto place = [&](const std::vector<int>& bounds, double* peak, int* peak_rank) -> bool {
    auto fill = [&](std::vector<double>& x) {  // = assign(P, 0.0), inlined
      x.resize(P);
      std::fill(x.begin(), x.end(), 0.0);
    };
    fill(I.dev_static);
    fill(I.dev_transient);
    fill(I.dev_params);
    fill(I.dev_compute);
    fill(I.dev_tp);
    fill(I.dev_cp);
    fill(I.dev_window);
    fill(I.dev_mem);
    fill(I.dev_finish);
    fill(I.dev_dp_exposed);
    fill(I.dev_weight);
    fill(I.dev_grad);
    fill(I.dev_optim);
    fill(I.dev_step);
    fill(I.dev_dp_total);
    fill(I.dev_last_rs);
    fill(I.dev_dp_inline);
    fill(I.dev_fwd);
    fill(I.dev_expert);
    si.kind = static_cast<ScheduleKind>(static_cast<int>(c.schedule));
    if (c.schedule == Schedule::kDualPipe && !dual) si.kind = ScheduleKind::k1F1B;  // P = 1
    si.devices = P;
    si.chunks = dual ? 2 : v;
    si.microbatches = M;
    si.mode = blocking ? P2PMode::kBlocking : P2PMode::kAsync;
    const int SV = dual ? 2 * S : S;  // DualPipe: stage s again as vs = S + s on device P−1−s
    for (auto* x : {&si.fwd_s, &si.bwd_s, &si.wgt_s, &si.act_bytes, &si.wkeep_bytes}) {
      x->resize(SV);  // = assign(SV, 0.0), inlined
      std::fill(x->begin(), x->end(), 0.0);
    }
    si.p2p_s = I.hop_s;
    if (dual) {  // the reverse direction's hop S+s → S+s+1 joins devices P−1−s and P−2−s
      si.p2p_s.assign(SV - 1, 0.0);
      for (int s = 0; s + 1 < S; ++s) {
        si.p2p_s[s] = I.hop_s[s];
        si.p2p_s[S + s] = I.hop_s[S - 2 - s];
      }
    }
    // DualPipe: device d holds stage d and stage P−1−d (two parameter copies, DeepSeek-V3
    // report §3.2.1) and runs half of the micro-batches through each: static bytes count
    // twice, per-micro-batch times half each.
    const double share = dual ? 0.5 : 1.0;
    for (int s = 0; s < S; ++s) {
      const int d = I.stage_device[s];  // dev_of(s)
      const int d2 = dual ? P - 1 - s : d;
      if (!dual) {
        // The same additions in the same order as the general loop below, in locals (the
        // stores through the vectors, which may alias, kept them in memory).
        double f = 0, bw = 0, wg = 0, ab = 0, wk = 0;
        double st = I.dev_static[d], we = I.dev_weight[d], gr = I.dev_grad[d], op = I.dev_optim[d],
               sp = I.dev_step[d], pa = I.dev_params[d], ex = I.dev_expert[d],
               tr = I.dev_transient[d], cm = I.dev_compute[d], tp = I.dev_tp[d], cpc = I.dev_cp[d];
        for (int i = bounds[s]; i < bounds[s + 1]; ++i) {
          const ItemCost& it = *item_at[i];  // item(i)
          f += it.fwd_s;
          bw += it.bwd_s;
          wg += it.wgt_s;
          ab += it.act_bytes;
          wk += it.wkeep_bytes;
          st += it.static_bytes;
          we += it.weight_bytes;
          gr += it.grad_bytes;
          op += it.optim_bytes;
          sp += it.step_bytes;
          pa += it.params;
          ex += it.expert_params;
          tr = std::max(tr, it.transient_bytes);
          cm += share * it.compute_s;
          tp += share * it.tp_comm_s;
          cpc += share * it.cp_comm_s;
        }
        si.fwd_s[s] = f;
        si.bwd_s[s] = bw;
        si.wgt_s[s] = wg;
        si.act_bytes[s] = ab;
        si.wkeep_bytes[s] = wk;
        I.dev_static[d] = st;
        I.dev_weight[d] = we;
        I.dev_grad[d] = gr;
        I.dev_optim[d] = op;
        I.dev_step[d] = sp;
        I.dev_params[d] = pa;
        I.dev_expert[d] = ex;
        I.dev_transient[d] = tr;
        I.dev_compute[d] = cm;
        I.dev_tp[d] = tp;
        I.dev_cp[d] = cpc;
      }
      for (int i = bounds[s]; i < bounds[s + 1] && dual; ++i) {
        const ItemCost& it = *item_at[i];  // item(i)
        si.fwd_s[s] += it.fwd_s;
        si.bwd_s[s] += it.bwd_s;
        si.wgt_s[s] += it.wgt_s;
        si.act_bytes[s] += it.act_bytes;
        si.wkeep_bytes[s] += it.wkeep_bytes;
        for (int k = 0; k < 2; ++k) {
          const int dd = k == 0 ? d : d2;
          I.dev_static[dd] += it.static_bytes;
          I.dev_weight[dd] += it.weight_bytes;
          I.dev_grad[dd] += it.grad_bytes;
          I.dev_optim[dd] += it.optim_bytes;
          I.dev_step[dd] += it.step_bytes;
          I.dev_params[dd] += it.params;
          I.dev_expert[dd] += it.expert_params;
          I.dev_transient[dd] = std::max(I.dev_transient[dd], it.transient_bytes);
          I.dev_compute[dd] += share * it.compute_s;
          I.dev_tp[dd] += share * it.tp_comm_s;
          I.dev_cp[dd] += share * it.cp_comm_s;
        }
      }
      if (const int r = I.stage_recomputed[s]; r > 0) {  // partial recomputation
        si.bwd_s[s] += r * delta.bwd_s;
        si.act_bytes[s] = std::max(0.0, si.act_bytes[s] - r * delta.act_bytes);
        I.dev_transient[d] = std::max(I.dev_transient[d], delta.transient_bytes);
        I.dev_compute[d] += r * delta.compute_s;
        I.dev_tp[d] += r * delta.tp_comm_s;
        I.dev_cp[d] += r * delta.cp_comm_s;
      }
      if (!blocking) {
        // Asynchronous p2p still runs NCCL kernels beside the compute: each pass sends one
        // tensor and receives one (activation forward, gradient backward), charged as
        // contention (the transfer itself delays only the receiver, in the simulation).
        const double hops = (s + 1 < S ? I.hop_s[s] : 0.0) + (s > 0 ? I.hop_s[s - 1] : 0.0);
        si.fwd_s[s] += rho * hops;
        si.bwd_s[s] += rho * hops;
      }
      if (I.amax.fwd_s > 0 && stage_has_layers(bounds, s, n_items)) {
        si.fwd_s[s] += I.amax.fwd_s;
        si.bwd_s[s] += I.amax.bwd_s;
      }
      I.dev_fwd[d] += si.fwd_s[s];
      if (shard_grads || shard_params) {
        // Per micro-batch: the forward's gathers hide behind the stage's forward, one item
        // ahead (FSDP prefetch), so the first item's gather is waited for; the backward
        // re-gathers the weights (FSDP reshards after the forward) and reduce-scatters the
        // gradients behind the stage's backward. Without the stack's overlap, all is exposed.
        double ag = 0, rs = 0, passes = 0;
        for (int i = bounds[s]; i < bounds[s + 1]; ++i) {
          ag += ag_item[kind_of(i)];
          rs += rs_item[kind_of(i)];
          passes += grad_pass_item[kind_of(i)];
        }
        const double ag_first = bounds[s] < bounds[s + 1] ? ag_item[kind_of(bounds[s])] : 0.0;
        double fwd_ext = 0;
        // FSDP with PP gathers for the warm-up forwards only (min(P − d, M) of M): pipelining
        // keeps the weights after a backward (docs/moe.md "FSDP with TP and PP").
        const double fwd_share = fsdp_pp ? double(std::min(P - d, M)) / M : 1.0;
        if (shard_params) {
          fwd_ext = fwd_share * (trn.overlap_param_gather
                                     ? ag_first + overlap_charge(ag - ag_first, si.fwd_s[s], rho)
                                     : ag);
        }
        if (!shard_grads) rs = 0;
        const double bwd_comm = ag + rs;
        // FSDP BACKWARD_POST (training.overlap_backward_gather = false): each unit's re-gather is
        // issued after the previous unit's gradients and the backward waits for it; only the
        // reduce-scatters hide (PyTorch FSDP BackwardPrefetch; docs/step-time.md "llm-foundry:
        // FSDP backward prefetch").
        const double ag_waited = trn.overlap_backward_gather ? 0.0 : ag;
        const double bwd_ext =
            ag_waited + (trn.overlap_grad_reduce
                             ? overlap_charge(bwd_comm - ag_waited, si.bwd_s[s] + si.wgt_s[s], rho)
                             : bwd_comm - ag_waited);
        si.fwd_s[s] += fwd_ext;
        si.bwd_s[s] += bwd_ext;
        // Added last, so that the sums are bit-identical where there are no passes.
        if (passes > 0) {
          si.bwd_s[s] += passes;
          I.dev_compute[d] += passes;
        }
        I.dev_dp_inline[d] += M * (fwd_ext + bwd_ext);
        I.dev_dp_total[d] += M * (fwd_share * ag + bwd_comm);
        // The backward ends with the stage's first item: its reduce-scatter in the last
        // micro-batch has nothing left to hide behind.
        if (shard_grads && s < P && bounds[s] < bounds[s + 1])
          I.dev_last_rs[d] = rs_item[kind_of(bounds[s])];
      }
      I.dev_window[d] += share * (si.bwd_s[s] + si.wgt_s[s]);
      if (dual) {
        I.dev_window[d2] += share * (si.bwd_s[s] + si.wgt_s[s]);
        si.fwd_s[S + s] = si.fwd_s[s];
        si.bwd_s[S + s] = si.bwd_s[s];
        si.wgt_s[S + s] = si.wgt_s[s];
        si.act_bytes[S + s] = si.act_bytes[s];
        si.wkeep_bytes[S + s] = si.wkeep_bytes[s];
      }
    }
    // Memory first (docs/performance.md "Memory before time"): once a layout of this candidate
    // was over the capacity, or when its bound already is, the fast path simulates only the
    // memory (simulate_memory(): the op order's states, no times) and the times only for a
    // layout that fits. Every caller rejects a layout over the capacity without reading its
    // times, which are then NaN.
    if (I.opt.full_simulation) {
      simulate(si, I.sim_ws, &I.sim);
    } else if (memory_first) {
      I.sim_cache.simulate_memory(si, I.sim_ws, &I.sim);
    } else {
      I.sim_cache.simulate_fast(si, I.sim_ws, &I.sim);
    }
    if (!I.sim.ok) return false;
    *peak = 0;
    *peak_rank = 0;
    for (int d = 0; d < P; ++d) {
      // The optimizer step's fp32 gradient copy is live only when the activations are not
      // (docs/memory.md "Static memory"): the rank's peak is the larger of the two phases.
      I.dev_mem[d] = I.dev_static[d] +
                     std::max(I.sim.peak_act_bytes[d] + I.dev_transient[d], I.dev_step[d]) +
                     cc.extra_bytes;
      if (I.dev_mem[d] > *peak) {
        *peak = I.dev_mem[d];
        *peak_rank = d;
      }
    }
    if (*peak > cap) {
      memory_first = may_memory_first;
    } else if (memory_first) {
      I.sim_cache.simulate_fast(si, I.sim_ws, &I.sim);  // the same memory figures, and the times
      if (!I.sim.ok) return false;
    }
    return true;
  };

  double peak = 0;
  int peak_rank = 0;
  std::vector<int>& bounds = I.bounds;
  if (I.fixed_bounds.size() == static_cast<std::size_t>(S) + 1 && !partial) {
    // A fixed pipeline layout (search.pp_layout): the candidate runs it as given, e.g. the layout
    // a published run's recipe pins (Megatron-LM --pipeline-model-parallel-layout); its memory is
    // checked below like any other partition's. check() asks for pp·vpp segments and no partial
    // recomputation, so every candidate takes it.
    bounds = I.fixed_bounds;
    if (!place(bounds, &peak, &peak_rank)) {
      set_infeasible(&e, Infeasible::kSchedule);
      return;
    }
  } else if (v == 1) {
    // Exact: the memory-aware DP sees each stage's own in-flight count (§1.3). When
    // the time-optimal partition without a memory limit already fits, it is the answer
    // (the DP's optimum has the same value; by definition of the noise-robust choice the
    // relaxed choice is kept, docs/performance.md), so the DP is skipped.
    const std::vector<int>& rb = relaxed_bounds(true);
    if ((!partial || c.recompute_num_layers < 0) &&
        evaluate_partition(pp, rb, I.part_ws).feasible) {
      bounds = rb;  // partial, fewest that fit: nothing needs recomputing
    } else if (partial && [&] {
                 const PartialRecomputePartition pr = partition_partial_recompute(pp, prc);
                 if (!pr.partition.feasible) return false;
                 bounds = pr.partition.bounds;
                 I.stage_recomputed = pr.recomputed;
                 return true;
               }()) {
      // partial recomputation: bounds and per-stage counts set
    } else if (const Partition& part = partial ? I.part_ref : run_partitioner(pp);
               !partial && part.feasible) {
      bounds = part.bounds;
    } else {
      // Figures for the user: the time-optimal partition without a memory limit,
      // and the rank of it that needs the most.
      double worst = -1;
      int worst_rank = 0;
      for (int s = 0; s < S; ++s) {
        double st = 0, act = 0, tr = 0;
        for (int i = rb[s]; i < rb[s + 1]; ++i) {
          st += pp.static_bytes[i];
          act += pp.act_bytes[i];
          tr = std::max(tr, pp.transient_bytes[i]);
        }
        const double m = st + pp.in_flight[s] * act + tr + pp.extra_bytes[s];
        if (m > worst) {
          worst = m;
          worst_rank = s;
        }
      }
      set_infeasible(&e, Infeasible::kMemory);
      e.worst_rank = worst_rank;
      e.needed_bytes = worst;
      return;
    }
    if (!place(bounds, &peak, &peak_rank)) {
      set_infeasible(&e, Infeasible::kSchedule);
      return;
    }
  } else {
    // Interleaved (heuristic, §1.3 "Interleaved / V-shaped schedules"): a device's
    // load is a sum of non-contiguous chunks, so the chain DP cannot see device
    // memory, nor the device loads and the order of the chunks that set the step time
    // (Narayanan et al., SC'21 §2.2). First the candidate chunk chains without a memory
    // limit (relaxed_bounds(): the latest-cut chain within the tolerance of the optimal
    // chunk bottleneck, as it is and device-balanced, the earliest-cut one) and Megatron's even
    // layout (layers divisible by P·v), each simulated: the fastest whose simulated
    // per-device memory fits wins, an earlier one on a tie within the tolerance (so that
    // last-bit noise cannot pick). If none fits, the chain DP again with each chunk held
    // to 1/v of the device, and the fallbacks below.
    // A lower bound on each device's simulated peak: its static bytes, the activations live at
    // its first backward, its largest transient and the reserve. A chain above the capacity by
    // that bound alone cannot fit; it is not simulated. Live at the first backward: one
    // micro-batch on each of its chunks (a micro-batch's forward passes every chunk before its
    // backward starts); for interleaved 1F1B all the warm-up forwards, in_flight() per chunk.
    // Micro-batches whose activations stage st holds at its first backward.
    auto live_of = [&](int st) {
      return c.schedule == Schedule::kInterleaved1F1B ? pp.in_flight[st] : 1.0;
    };
    // device_bound() writes that bound per device into `bound`.
    auto device_bound = [&](const std::vector<int>& b, std::vector<double>& bound) {
      bound.assign(P, 0.0);
      std::vector<double>& tr = I.dev_need;
      tr.assign(P, 0.0);
      for (int st = 0; st < S; ++st) {
        const int d = I.stage_device[st];
        const double live = live_of(st);
        double lo = bound[d], t = tr[d];  // in locals: the same operations, kept in registers
        for (int i = b[st]; i < b[st + 1]; ++i) {
          lo += pp.static_bytes[i] + live * pp.act_bytes[i];
          t = std::max(t, pp.transient_bytes[i]);
        }
        bound[d] = lo;
        tr[d] = t;
      }
      for (int d = 0; d < P; ++d) bound[d] = bound[d] + tr[d] + cc.extra_bytes;
    };
    auto memory_over = [&](const std::vector<int>& b) {
      std::vector<double>& low = I.chunk_need;
      device_bound(b, low);
      bool over = false;
      for (int d = 0; d < P && !over; ++d) over = low[d] > cap;
      return over;
    };
    // A lower bound on memory_over()'s largest device figure for every chain whose stages are
    // not empty: the mean over the P devices of their sums (Σ static + Σ_σ live_σ·A_σ, where the
    // activations A_σ of stage σ are at least the smallest item's, and all of them count at
    // least the smallest live_σ) plus the smallest transient (every device holds an item).
    // Above the capacity (with a margin of 1e-9 for the rounding of either sum), memory_over()
    // holds for every chain: then no chain fits, the chains after the first are not needed,
    // and the fallbacks' partitions need not be computed (docs/performance.md "Candidates on
    // demand").
    bool hopeless = false;
    {
      double stat = 0, act = 0;
      double act_min = std::numeric_limits<double>::infinity(), tr_min = act_min,
             live_min = act_min;
      for (int i = 0; i < n_items; ++i) {
        stat += pp.static_bytes[i];
        act += pp.act_bytes[i];
        act_min = std::min(act_min, pp.act_bytes[i]);
        tr_min = std::min(tr_min, pp.transient_bytes[i]);
      }
      for (int st = 0; st < S; ++st) live_min = std::min(live_min, live_of(st));
      double excess = 0;
      for (int st = 0; st < S; ++st) excess += live_of(st) - live_min;
      const double low = (stat + live_min * act + act_min * excess) / P + tr_min + cc.extra_bytes;
      hopeless = low > cap * (1.0 + 1e-9);
    }
    // A lower bound on the makespan of device d (stage d is its first, interleaved and V-shape
    // alike): it runs every op of its chunks for all M micro-batches one after another (the item
    // times are the op durations), cannot start before the first micro-batch's forward has
    // passed stages 0..d−1, and after its last op (the backward of stage d of the last
    // micro-batch) the backwards of stages d−1..0 remain. Over the devices, for chain `b`
    // (after memory_over(), whose device array it reuses).
    auto makespan_low = [&](const std::vector<int>& b) {
      std::vector<double>& low = I.chunk_need;
      low.assign(P, 0.0);
      double head = 0, bound = 0;
      for (int st = 0; st < S; ++st) {
        double lo = low[I.stage_device[st]];
        for (int i = b[st]; i < b[st + 1]; ++i) lo += pp.time_s[i];
        low[I.stage_device[st]] = lo;
      }
      for (int d = 0; d < P; ++d) {
        bound = std::max(bound, head + M * low[d]);
        for (int i = b[d]; i < b[d + 1]; ++i) head += item_at[i]->fwd_s + item_at[i]->bwd_s;
      }
      return bound;
    };
    const std::vector<int>& chains = relaxed_bounds(!hopeless);
    const std::size_t width = static_cast<std::size_t>(S) + 1;
    const int n_chains = static_cast<int>(chains.size() / width);
    // Megatron-Core's own splits (docs/algorithms.md §1.3 "Megatron's layouts"), in this
    // order: the even one (layers divisible by P·v), and the ones its
    // account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split options
    // build, where the embedding, the loss or both count as one layer of the first or last
    // virtual stage (NVIDIA/Megatron-LM d98e8a64 megatron/core/transformer/transformer_block.py
    // get_num_layers_to_build). A chain DP tie or the memory repair can miss them although
    // they are balanced by construction.
    // The even one is a candidate chain below; the others are tried after the chain choice and
    // its fallbacks (try_accounted()), so that a slower one that fits cannot stand in for the
    // memory repair, which runs only when no candidate chain fits.
    I.fixed_layouts.clear();
    int n_fixed = megatron_layouts(pb.model.layers, S, I.fixed_layouts);
    const int n_even = pb.model.layers % S == 0 ? 1 : 0;  // the even one comes first
    if (!I.opt.megatron_layouts) n_fixed = n_even;
    std::vector<int>& cand = I.chain_bounds;
    double best_time = std::numeric_limits<double>::infinity();
    int best = -1;
    double first_peak_all = 0;
    int first_rank_all = 0;
    double best_peak = 0;
    int best_rank = 0;
    // The chains placed below and what place() gave (none of them fits when no chain wins), so
    // that the fallbacks do not place one of them again.
    int n_tried = 0;
    int tried_k[8];
    bool tried_ok[8];
    double tried_peak[8];
    int tried_rank[8];
    for (int k = 0; k < n_chains + n_even; ++k) {
      if (k > 0 && hopeless) break;  // memory_over() holds for it (the bound above)
      if (k < n_chains) {
        cand.assign(chains.begin() + k * width, chains.begin() + (k + 1) * width);
      } else {
        cand.assign(I.fixed_layouts.begin() + (k - n_chains) * width,
                    I.fixed_layouts.begin() + (k - n_chains + 1) * width);
      }
      bool seen = false;
      for (int j = 0; j < k && j < n_chains && !seen; ++j) {
        seen = std::equal(cand.begin(), cand.end(), chains.begin() + j * width);
      }
      if (seen) continue;
      if (k == 0) {
        // Placed for its figures, over the capacity or not.
        memory_first = may_memory_first && memory_over(cand);
      } else {
        if (memory_over(cand)) continue;
        // A candidate that cannot beat the best so far is not simulated.
        if (best >= 0 && makespan_low(cand) >= best_time * (1.0 - kPartitionTieTolerance)) {
          continue;
        }
      }
      const bool placed = place(cand, &peak, &peak_rank);
      if (n_tried < 8) {
        tried_k[n_tried] = k;
        tried_ok[n_tried] = placed;
        tried_peak[n_tried] = peak;
        tried_rank[n_tried] = peak_rank;
        ++n_tried;
      }
      if (k == 0) {
        if (!placed) {
          set_infeasible(&e, Infeasible::kSchedule);
          return;
        }
        first_peak_all = peak;
        first_rank_all = peak_rank;
        // The first chain's simulated peaks, for the repair below.
        if (I.opt.memory_repair && peak > cap) I.repair_mem0 = I.dev_mem;
      }
      if (placed && peak <= cap && I.sim.time_s < best_time * (1.0 - kPartitionTieTolerance)) {
        best_time = I.sim.time_s;
        best = k;
        bounds = cand;
        best_peak = peak;
        best_rank = peak_rank;
        I.swap_placed();  // keep what place() left for this chain
      }
    }
    // Memory repair (docs/algorithms.md §1.3 "Memory repair"). When no candidate chain fits,
    // the fallbacks below hold each chunk to a budget, so a device a little over the capacity
    // loses a layer from every one of its chunks and the layers pile up elsewhere (or nothing
    // fits). The repair walks from the first chain (the latest-cut chain within the tolerance
    // of the optimal chunk bottleneck) instead, one item per step, off the device with the
    // highest simulated peak: from one of its chunks along the chain to another chunk, every
    // chunk in between passing one item on (to another device, or to a later chunk of the same
    // device, which holds fewer micro-batches in flight). Of the moves that lower that
    // device's memory bound, the kRepairWidth with the least excess over the capacity that the
    // bounds plus each device's simulated margin predict (then the smallest largest device
    // load, the steady state per micro-batch, Narayanan et al., SC'21 §2.2, then the smallest
    // chunk bottleneck) are simulated. A step that gives a chain that fits ends the walk (the
    // fastest such chain is kept); otherwise the walk goes on from the move that lowers the
    // simulated excess most, and gives up when none lowers it, when at the step's rate the
    // steps left could not bring it to zero, or after kRepairSteps steps. The repaired chain
    // is kept unless a fallback gives a faster one, so the answer is never slower than without
    // it.
    // What the repair's and the polish's moves are scored on: an item's bytes on its device at
    // `stage`; and of chain b, the stage times (T + c), the device loads and the prefix and
    // suffix maxima of the stage times (the chunks a move leaves alone).
    auto held = [&](int i, int stage) {
      return pp.static_bytes[i] + live_of(stage) * pp.act_bytes[i];
    };
    auto stage_profile = [&](const std::vector<int>& b, std::vector<double>& stage_t,
                             std::vector<double>& load, std::vector<double>& pre,
                             std::vector<double>& suf) {
      stage_t.resize(S);
      load.assign(P, 0.0);
      for (int k = 0; k < S; ++k) {
        double t = pp.comm_s[k];
        for (int it = b[k]; it < b[k + 1]; ++it) t += pp.time_s[it];
        stage_t[k] = t;
        load[I.stage_device[k]] += t;
      }
      pre.assign(S + 1, 0.0);
      suf.assign(S + 1, 0.0);
      for (int k = 0; k < S; ++k) pre[k + 1] = std::max(pre[k], stage_t[k]);
      for (int k = S - 1; k >= 0; --k) suf[k] = std::max(suf[k + 1], stage_t[k]);
    };
    bool repaired = false;
    double repaired_time = 0;
    // Walked only when no candidate chain fits (when a later one fits, it is kept: a walk there
    // too would cost simulations on every such candidate, docs/algorithms.md §1.3), and not when
    // kRepairSteps moves cannot bring the chain within the capacity: every
    // device's simulated peak is at least its bound, so a chain that fits has the sum of the
    // bounds within P × the capacity, and a move changes that sum only by the moved item's
    // activations times the difference of two in-flight counts (its static bytes stay on some
    // device) and the devices' largest transients by at most P × the largest.
    bool walk = !hopeless && I.opt.memory_repair && best < 0;
    if (walk) {
      double live_min = std::numeric_limits<double>::infinity(), live_max = 1.0;
      for (int st = 0; st < S; ++st) {
        live_min = std::min(live_min, live_of(st));
        live_max = std::max(live_max, live_of(st));
      }
      double act_max = 0, tr_max = 0;
      for (int i = 0; i < n_items; ++i) {
        act_max = std::max(act_max, pp.act_bytes[i]);
        tr_max = std::max(tr_max, pp.transient_bytes[i]);
      }
      std::vector<int>& rb = I.repair_bounds;
      rb.assign(chains.begin(), chains.begin() + width);
      device_bound(rb, I.repair_low);
      double sum = 0;
      for (int d = 0; d < P; ++d) sum += I.repair_low[d];
      walk = sum - P * cap <= kRepairSteps * (live_max - live_min) * act_max + P * tr_max;
    }
    if (walk) {
      std::vector<int>& rb = I.repair_bounds;           // the chain being walked
      std::vector<double>& low = I.repair_low;          // its memory bounds, per device
      std::vector<double>& margin = I.repair_margin;    // simulated peak − bound, per device
      std::vector<double>& stage_t = I.repair_stage_t;  // T + c per stage
      std::vector<double>& load = I.repair_load;        // per device
      std::vector<double>& dB = I.repair_try;           // a move's changes to them
      std::vector<double>& dL = I.repair_dload;
      std::vector<double>& dT = I.repair_dt;
      margin.resize(P);
      auto over_of = [&](int d, double shifted) {  // predicted excess of device d
        return std::max(0.0, low[d] + shifted + margin[d] - cap);
      };
      struct Move {
        int from = -1, to = -1;
        double over = 0, load = 0, chunk = 0;
      };
      // Ties within the tolerance go to the earlier move (the margins come from simulations that
      // the fast and the full paths give up to the last bits).
      const double eo = kPartitionTieTolerance * cap, et = 1.0 - kPartitionTieTolerance;
      auto better = [&](const Move& x, const Move& y) {
        if (x.over < y.over - eo) return true;
        if (y.over < x.over - eo) return false;
        if (x.load < y.load * et) return true;
        if (y.load < x.load * et) return false;
        return x.chunk < y.chunk * et;
      };
      std::vector<double>& mem = I.repair_mem;  // the walked chain's simulated peaks
      mem = I.repair_mem0;
      auto excess_of = [&](const std::vector<double>& m) {
        double x = 0;
        for (int d = 0; d < P; ++d) x += std::max(0.0, m[d] - cap);
        return x;
      };
      Move top[kRepairWidth];
      double pk = 0;
      int pr = 0;
      for (int step = 0; step < kRepairSteps; ++step) {
        const double excess = excess_of(mem);
        int worst = 0;
        for (int d = 0; d < P; ++d) {
          margin[d] = std::max(0.0, mem[d] - low[d]);
          if (mem[d] > mem[worst] + eo) worst = d;  // the first on a tie
        }
        double over0 = 0;
        for (int d = 0; d < P; ++d) over0 += over_of(d, 0.0);
        std::vector<double>& pre = I.repair_pre;
        std::vector<double>& suf = I.repair_suf;
        stage_profile(rb, stage_t, load, pre, suf);
        // The kRepairWidth best moves by the prediction, scored incrementally: moving on from
        // stage st to stage `to`, each boundary in between passes one item, so the bounds, the
        // device loads and the stage times change by that item's terms (its transient, like
        // every layer's, is taken as unchanged).
        int n_top = 0;
        for (int st = 0; st < S; ++st) {
          if (I.stage_device[st] != worst || rb[st + 1] - rb[st] < 2) continue;
          for (int dir = +1; dir >= -1; dir -= 2) {
            dB.assign(P, 0.0);
            dL.assign(P, 0.0);
            dT.assign(S, 0.0);
            double over = over0;
            double passed = 0;  // the largest final time of the stages passed
            for (int to = st + dir; to >= 0 && to < S; to += dir) {
              const int src = to - dir;
              const int moved = dir > 0 ? rb[to] - 1 : rb[src];
              const int ds = I.stage_device[src], dt = I.stage_device[to];
              auto bump = [&](int d, double by) {
                over -= over_of(d, dB[d]);
                dB[d] += by;
                over += over_of(d, dB[d]);
              };
              bump(ds, -held(moved, src));
              bump(dt, held(moved, to));
              dL[ds] -= pp.time_s[moved];
              dL[dt] += pp.time_s[moved];
              dT[src] -= pp.time_s[moved];
              dT[to] += pp.time_s[moved];
              passed = std::max(passed, stage_t[src] + dT[src]);  // src is final now
              if (!(dB[worst] < 0)) continue;  // the move must lower the worst device's bound
              // Cannot enter the list on the excess: its load and chunks are not needed.
              if (n_top == kRepairWidth && over > top[n_top - 1].over + eo) continue;
              Move mv;
              mv.from = st, mv.to = to, mv.over = over;
              for (int d = 0; d < P; ++d) mv.load = std::max(mv.load, load[d] + dL[d]);
              const int lo = std::min(st, to), hi = std::max(st, to);
              mv.chunk = std::max({passed, stage_t[to] + dT[to], pre[lo], suf[hi + 1]});
              keep_best(top, n_top, kRepairWidth, mv, better);
            }
          }
        }
        // Each simulated: the fastest that fits ends the walk; otherwise it goes on from the
        // one that lowers the simulated excess most.
        int next = -1;
        bool fitted = false;
        double next_excess = excess - eo;  // lower than that: not last-bit noise
        for (int k = 0; k < n_top; ++k) {
          pass_item(rb, top[k].from, top[k].to);
          if (place(rb, &pk, &pr)) {
            if (pk <= cap) {
              fitted = true;
              if (!repaired || I.sim.time_s < repaired_time * (1.0 - kPartitionTieTolerance)) {
                repaired = true;
                repaired_time = I.sim.time_s;
                I.repair_found = rb;
              }
            } else if (const double x = excess_of(I.dev_mem); x < next_excess) {
              next_excess = x - eo;  // a later move must beat it by more than last-bit noise
              next = k;
              I.repair_next_mem = I.dev_mem;
            }
          }
          pass_item(rb, top[k].to, top[k].from);
        }
        if (fitted || next < 0) break;
        pass_item(rb, top[next].from, top[next].to);
        mem = I.repair_next_mem;
        device_bound(rb, low);
        // At this step's rate, the steps left cannot bring the excess to zero: give up.
        const double left = excess_of(mem);
        if (left > (excess - left) * (kRepairSteps - 1 - step)) break;
      }
    }
    // Megatron's layouts other than the even one (megatron_layouts(): the embedding, the loss or
    // both counted as layers), after the chain choice and its fallbacks: each that fits and is
    // faster beyond the tolerance replaces the chosen chain (`have`: I holds the chosen chain as
    // place() left it, with `bounds`, `peak` and `peak_rank`). True if a chain is chosen then.
    auto try_accounted = [&](bool have) {
      if (hopeless || n_fixed <= n_even) return have;
      double t_best = have ? I.sim.time_s : std::numeric_limits<double>::infinity();
      if (have) I.swap_placed();  // the chosen chain's placement kept aside
      const double kept_peak = peak;
      const int kept_rank = peak_rank;
      bool adopted = false;
      for (int j = n_even; j < n_fixed; ++j) {
        cand.assign(I.fixed_layouts.begin() + j * width, I.fixed_layouts.begin() + (j + 1) * width);
        if (have && std::equal(cand.begin(), cand.end(), bounds.begin())) continue;
        if (memory_over(cand)) continue;
        if (std::isfinite(t_best) &&
            makespan_low(cand) >= t_best * (1.0 - kPartitionTieTolerance)) {
          continue;
        }
        double pk = 0;
        int rk = 0;
        if (!place(cand, &pk, &rk) || pk > cap) continue;
        if (!(I.sim.time_s < t_best * (1.0 - kPartitionTieTolerance))) continue;
        t_best = I.sim.time_s;
        bounds = cand;
        peak = pk;
        peak_rank = rk;
        I.swap_placed();  // this one kept aside instead
        have = adopted = true;
      }
      if (have) I.swap_placed();  // the chosen chain back in place
      if (!adopted) {
        peak = kept_peak;
        peak_rank = kept_rank;
      }
      return have;
    };
    if (best >= 0) {
      // The winner as place() left it (placing it again would give the same bits).
      I.swap_placed();
      peak = best_peak;
      peak_rank = best_rank;
    } else {
      bounds.assign(chains.begin(), chains.begin() + width);
      peak = first_peak_all;
      peak_rank = first_rank_all;
    }
    if (peak > cap) {
      const double first_peak = peak;
      const int first_rank = peak_rank;
      // The index among the chains placed above of one equal to `b` that did not fit (place()
      // failed or its peak is over the capacity), or −1.
      auto tried_unfit = [&](const std::vector<int>& b) {
        for (int t = 0; t < n_tried; ++t) {
          if (tried_ok[t] && !(tried_peak[t] > cap)) continue;
          const int k = tried_k[t];
          bool same = true;
          if (k < n_chains) {
            same = std::equal(b.begin(), b.end(), chains.begin() + k * width);
          } else {  // one of Megatron's layouts
            same = std::equal(b.begin(), b.end(), I.fixed_layouts.begin() + (k - n_chains) * width);
          }
          if (same) return t;
        }
        return -1;
      };
      // Whether `b` fits, placed and simulated, unless it is known not to: a chain that did not
      // fit above, or one above the capacity by the lower bound alone (place() would give a
      // peak above it, or fail).
      auto fits = [&](const std::vector<int>& b) {
        if (tried_unfit(b) >= 0 || memory_over(b)) return false;
        return place(b, &peak, &peak_rank) && peak <= cap;
      };
      // When no chain fits by the bound above, fits() would reject whatever they give.
      bool ok = false;
      if (!hopeless) {
        const Partition& part = run_partitioner(pp);
        ok = part.feasible;
        if (ok) {
          bounds = part.bounds;
          ok = fits(bounds);
        }
        if (!ok) {
          // Second try: instead of 1/v of the device per chunk, each chunk gets the device's
          // capacity in proportion to what it needs in the time-optimal chain (a chunk that
          // holds more in-flight micro-batches or the embedding gets more), as per-stage
          // budgets (capacity − budget enters as the stage's reserve E_σ). The device
          // memory is again checked on the simulated op order.
          const std::vector<int>& rb = chains;  // relaxed_bounds(), the latest-cut chain first
          std::vector<double>& need = I.chunk_need;
          need.assign(S, 0.0);
          std::vector<double>& dev_need = I.dev_need;
          dev_need.assign(P, 0.0);
          for (int st = 0; st < S; ++st) {
            double stat = 0, act = 0, tr = 0;
            for (int i = rb[st]; i < rb[st + 1]; ++i) {
              stat += pp.static_bytes[i];
              act += pp.act_bytes[i];
              tr = std::max(tr, pp.transient_bytes[i]);
            }
            need[st] = stat + pp.in_flight[st] * act + tr + pp.extra_bytes[st];
            dev_need[dev_of(st)] += need[st];
          }
          PartitionProblem& budgeted = I.part_budget;
          budgeted = pp;
          budgeted.capacity_bytes = cap;
          for (int st = 0; st < S; ++st) {
            const int sd = dev_of(st);
            const double share = dev_need[sd] > 0 ? need[st] / dev_need[sd] : 1.0 / v;
            budgeted.extra_bytes[st] = pp.extra_bytes[st] + cap * (1.0 - share);
          }
          const Partition& part2 = run_partitioner(budgeted);
          if (part2.feasible) {
            bounds = part2.bounds;
            ok = fits(bounds);
          }
        }
      }
      double need_bytes = first_peak;
      int need_rank = first_rank;
      if (!ok && n_even > 0) {
        // Last try: Megatron-LM's own layout, the same number of layers in every chunk, the
        // embedding with the first chunk and the head with the last (num_layers divisible by
        // PP·VPP is what Megatron requires of an interleaved run; docs/memory.md
        // "Interleaved"). A published interleaved run is laid out this way. It is the first of
        // megatron_layouts().
        bounds.assign(I.fixed_layouts.begin(), I.fixed_layouts.begin() + width);
        bool placed = false;
        if (const int t = tried_unfit(bounds); t >= 0) {  // placed above: its figures
          placed = tried_ok[t];
          peak = tried_peak[t];
          peak_rank = tried_rank[t];
        } else {
          placed = place(bounds, &peak, &peak_rank);
        }
        if (placed) {
          ok = peak <= cap;
          if (peak < need_bytes) {
            need_bytes = peak;
            need_rank = peak_rank;
          }
        }
      }
      // The repaired chain, placed again, unless a fallback fits and is faster beyond the
      // tolerance.
      if (repaired && (!ok || !(I.sim.time_s < repaired_time * (1.0 - kPartitionTieTolerance)))) {
        bounds = I.repair_found;
        if (!place(bounds, &peak, &peak_rank)) throw std::logic_error("evaluate: repaired chain");
        ok = true;
      }
      if (!try_accounted(ok)) {
        set_infeasible(&e, Infeasible::kMemory);
        e.worst_rank = need_rank;
        e.needed_bytes = need_bytes;
        return;
      }
    } else {
      try_accounted(true);
    }
    // Memory polish (docs/algorithms.md §1.3 "Memory polish"). When the first candidate chain
    // did not fit, the chain chosen above (a later candidate, the repair's, a fallback's or one
    // of Megatron's) fits but was not chosen for its time. From it, each step moves one item
    // from a stage to a neighbouring stage of the chain or to the next or previous chunk of the
    // same device (every stage in between passing one item on). Of the moves that keep every
    // device's bound plus its last simulated margin within the capacity, the kPolishWidth with
    // the lowest estimate M · (largest device load) + (P − 1) · (largest stage time) +
    // M / (4P) · Σ_k |t_k+1 − t_k| are simulated, if below the chain's own: M micro-batches of
    // steady state on the busiest device and the fill and drain of P − 1 stages (Narayanan et
    // al., SC'21 §2.2), and the stalls between consecutive stages of unequal time, which the
    // device loads cannot see (a heavy chunk between two light ones idles the next device in
    // every round of P micro-batches; the weight 1/4 is a ranking choice, measured in
    // tests/unit/test_memory_repair.cpp, not a cost). The fastest that fits and is faster
    // beyond the tolerance is kept; the walk stops when none is, or after kPolishSteps steps.
    // Never slower than the chain it starts from.
    if (I.opt.memory_polish && !hopeless && first_peak_all > cap) {
      std::vector<int>& cur = I.polish_bounds;
      std::vector<int>& tb = I.polish_try;
      std::vector<double>& low = I.polish_low;        // the walked chain's bounds, per device
      std::vector<double>& mem = I.polish_mem;        // its simulated peaks, per device
      std::vector<double>& load = I.polish_load;      // its loads, per device
      std::vector<double>& margin = I.polish_margin;  // simulated peak − bound, per device
      std::vector<double>& st_t = I.polish_stage_t;   // its stage times (T + c)
      std::vector<double>& pre = I.polish_pre;        // prefix / suffix maxima of st_t
      std::vector<double>& suf = I.polish_suf;
      std::vector<double>& dB = I.polish_db;  // a move's changes to the bounds and loads
      std::vector<double>& dL = I.polish_dl;
      cur = bounds;
      mem = I.dev_mem;
      double t_cur = I.sim.time_s;
      I.swap_placed();  // the chosen chain's placement kept aside
      const double et = 1.0 - kPartitionTieTolerance;
      const double w_tv = M / (4.0 * P);
      struct Move {
        int from = -1, to = -1;
        double est = 0;
      };
      Move top[kPolishWidth];
      std::vector<double>& moved_t = I.polish_moved;  // the new times of stages lo..hi
      moved_t.resize(static_cast<std::size_t>(P) + 1);
      for (int step = 0; step < kPolishSteps; ++step) {
        device_bound(cur, low);
        margin.resize(P);
        for (int d = 0; d < P; ++d) margin[d] = std::max(0.0, mem[d] - low[d]);
        stage_profile(cur, st_t, load, pre, suf);
        double tv0 = 0, most0 = 0;
        for (int k = 0; k + 1 < S; ++k) tv0 += std::fabs(st_t[k + 1] - st_t[k]);
        for (int d = 0; d < P; ++d) most0 = std::max(most0, load[d]);
        const double est0 = M * most0 + (P - 1) * pre[S] + w_tv * tv0;
        int n_top = 0;
        const int reach[4] = {+1, -1, +P, -P};
        for (int st = 0; st < S; ++st) {
          if (cur[st + 1] - cur[st] < 2) continue;  // the source keeps an item
          for (int r = 0; r < (P > 1 ? 4 : 2); ++r) {
            const int to = st + reach[r];
            if (to < 0 || to >= S) continue;
            const int dir = to > st ? +1 : -1;
            const int lo = std::min(st, to), hi = std::max(st, to);
            dB.assign(P, 0.0);
            dL.assign(P, 0.0);
            // Each boundary between st and `to` passes one item on; the stages in between keep
            // their counts. moved_t holds the new times of stages lo..hi.
            for (int k = lo; k <= hi; ++k) moved_t[k - lo] = st_t[k];
            for (int k = st + dir;; k += dir) {
              const int src = k - dir;
              const int mi = dir > 0 ? cur[k] - 1 : cur[src];
              const int ds = I.stage_device[src], dt = I.stage_device[k];
              dB[ds] -= held(mi, src);
              dB[dt] += held(mi, k);
              dL[ds] -= pp.time_s[mi];
              dL[dt] += pp.time_s[mi];
              moved_t[src - lo] -= pp.time_s[mi];
              moved_t[k - lo] += pp.time_s[mi];
              if (k == to) break;
            }
            bool fits = true;
            double most = 0;
            for (int d = 0; d < P && fits; ++d) {
              fits = low[d] + dB[d] + margin[d] <= cap;
              most = std::max(most, load[d] + dL[d]);
            }
            if (!fits) continue;
            double chunk = std::max(pre[lo], suf[hi + 1]);
            double tv = tv0;
            for (int k = lo; k <= hi; ++k) chunk = std::max(chunk, moved_t[k - lo]);
            // The |differences| that touch stages lo..hi: old ones out, new ones in.
            for (int k = std::max(lo - 1, 0); k < std::min(hi + 1, S - 1); ++k) {
              const double a = k >= lo ? moved_t[k - lo] : st_t[k];
              const double b = k + 1 <= hi ? moved_t[k + 1 - lo] : st_t[k + 1];
              tv += std::fabs(b - a) - std::fabs(st_t[k + 1] - st_t[k]);
            }
            Move mv{st, to, M * most + (P - 1) * chunk + w_tv * tv};
            if (!(mv.est < est0 * et)) continue;
            keep_best(top, n_top, kPolishWidth, mv,
                      [&](const Move& x, const Move& y) { return x.est < y.est * et; });
          }
        }
        int took = -1;
        double t_best = t_cur, pk_best = peak;
        int pr_best = peak_rank;
        for (int k = 0; k < n_top; ++k) {
          tb = cur;
          pass_item(tb, top[k].from, top[k].to);
          if (memory_over(tb)) continue;
          if (makespan_low(tb) >= t_best * et) continue;  // cannot beat it: not simulated
          double pk = 0;
          int pr = 0;
          if (!place(tb, &pk, &pr) || pk > cap) continue;
          if (!(I.sim.time_s < t_best * et)) continue;
          t_best = I.sim.time_s;
          pk_best = pk;
          pr_best = pr;
          took = k;
          I.polish_next_mem = I.dev_mem;
          I.swap_placed();  // this one kept aside instead
        }
        if (took < 0) break;
        pass_item(cur, top[took].from, top[took].to);
        t_cur = t_best;
        peak = pk_best;
        peak_rank = pr_best;
        mem = I.polish_next_mem;
        bounds = cur;
      }
      I.swap_placed();  // the chosen chain back in place
    }
  }
  e.worst_rank = peak_rank;
  e.needed_bytes = peak;
  if (peak > cap) {  // the zero-bubble in-flight count in the DP is an estimate
    set_infeasible(&e, Infeasible::kMemory);
    return;
  }

  // Deferred output-layer wgrad (training.defer_embedding_wgrad, cost/items.cpp): the rank that
  // holds the output layer runs the buffered weight-gradient GEMMs after its last backward, in
  // the pipeline flush, and finalises its gradients after them (Megatron-Core schedules.py:
  // finish_embedding_wgrad_compute, then finalize_model_grads_func). I.sim is this evaluation's
  // copy of the simulation, so the shift does not reach the simulation memo.
  if (cc.head_deferred_wgrad_s > 0) {
    const int d = dev_of(S - 1);
    I.sim.last_grad_end_s[d] += cc.head_deferred_wgrad_s;
    I.sim.busy_s[d] += cc.head_deferred_wgrad_s;
  }

  // ---- Data-parallel traffic at the step's ends, fixed costs (docs/step-time.md) -----------
  const double mem_bw = pb.gpu.hbm_bytes_per_s * pb.gpu.memory_efficiency;
  double optimizer_s = 0, param_gather_exposed = 0;
  int crit = 0;
  double t_end = 0;
  // Megatron reduces gradients in buckets of max(40 M, 1 M × DP) parameters
  // (distributed_data_parallel_config.py, docs/algorithms.md §5.4); each bucket pays the
  // collective's latency.
  const double bucket_params = std::max(40e6, 1e6 * dr);
  const int zero = base_c.zero;  // ZeRO-2 with PP costs as ZeRO-1 (fsdp_pp above)
  // Expert buckets over the expert-DP group (edp, edp_group above).
  const double bucket_e = std::max(40e6, 1e6 * edp);
  // The optimizer's bytes per parameter do not depend on the rank: decided once per candidate
  // (cost/optimizer_step.cpp compares the implementation and state names).
  const OptimizerStepBytes ob = optimizer_step_bytes(pb.training.optimizer_impl,
                                                     pb.training.optimizer_state_dtype, grad_elem);
  for (int d = 0; d < P; ++d) {
    const double phi = I.dev_params[d];
    double exposed = 0, total = 0, gather_exposed = 0, gather_total = 0;
    // One kind of gradient reduction, once per step, bucketed, hidden behind the last
    // micro-batch's backward (docs/step-time.md "DP overlap"): with --overlap-grad-reduce bucket
    // k starts when the last backward has produced it; buckets become ready evenly over the
    // backward window W, so all but the last hide behind the W·(1 − 1/n) still to run
    // (overlap_charge) and the last one follows the backward.
    // training.zero1_grad_allreduce (docs/step-time.md "DeepSpeed's BF16 optimizer"): DeepSpeed's
    // pipeline engine all-reduces the full fp32 gradients under its ZeRO-1-like BF16_Optimizer
    // (_bf16_reduce_grads -> buffered_allreduce_fallback), then gathers the updated shards.
    const bool grad_allreduce = zero == 0 || (zero == 1 && pb.training.zero1_grad_allreduce);
    auto reduce_once = [&](double params, double bucket_p, const GroupShape& g, double* tot,
                           double* exp) {
      const double nb = std::max(1.0, std::ceil(params / bucket_p));
      const double bucket =
          collective_time(grad_allreduce ? Collective::kAllReduce : Collective::kReduceScatter,
                          grad_elem * params / nb, g, I.links);
      *tot += nb * bucket;
      *exp +=
          trn.overlap_grad_reduce
              ? bucket + overlap_charge((nb - 1) * bucket, I.dev_window[d] * (1.0 - 1.0 / nb), rho)
              : nb * bucket;
    };
    // The updated bf16 parameters are all-gathered after the optimizer step (ZeRO-1/2); with
    // --overlap-param-gather bucket k is gathered behind the next step's first forward, so the
    // first bucket is waited for and the rest is charged against that forward.
    auto gather_once = [&](double params, double bucket_p, const GroupShape& g, double* tot,
                           double* exp) {
      const double nb = std::max(1.0, std::ceil(params / bucket_p));
      const double ag = collective_time(Collective::kAllGather, 2.0 * params / nb, g, I.links);
      *tot += nb * ag;
      *exp += trn.overlap_param_gather ? ag + overlap_charge((nb - 1) * ag, I.dev_fwd[d], rho)
                                       : nb * ag;
    };
    if (dr > 1 && !shard_grads) {
      // DDP all-reduce (ZeRO-0), distributed-optimizer reduce-scatter (ZeRO-1), or the one
      // reduce-scatter per step of FSDP with PP (fsdp_pp_gradients).
      reduce_once(phi, bucket_params, dp_group, &total, &exposed);
    } else if (shard_grads) {
      exposed = I.dev_last_rs[d];  // the last micro-batch's last reduce-scatter
    }
    if (dr > 1 && (zero == 1 || zero == 2)) {
      gather_once(phi, bucket_params, dp_group, &gather_total, &gather_exposed);
    }
    // MoE: expert gradients reduce over the expert-DP group, its members etp·ep ranks apart
    // (Megatron-Core expert order tp-ep-dp-pp, parallel_state.py); docs/moe.md. Charged as
    // the dense reduction, once per step; under ZeRO-2/3 they were reduce-scattered (and under
    // ZeRO-3 gathered) every micro-batch with the rest of their layer (place() above), and the
    // last reduce-scatter is the one in dev_last_rs.
    if (const double phi_e = I.dev_expert[d]; phi_e > 0 && edp > 1) {
      if (!shard_grads) {
        double e_exp = 0;
        reduce_once(phi_e, bucket_e, edp_group, &total, &e_exp);
        exposed = std::max(exposed, e_exp);  // on the same stream after the dense buckets
      }
      if (zero == 1 || zero == 2)
        gather_once(phi_e, bucket_e, edp_group, &gather_total, &gather_exposed);
    }
    param_gather_exposed = std::max(param_gather_exposed, gather_exposed);
    I.dev_dp_exposed[d] = exposed;  // after the rank's last backward (the step tail)
    I.dev_dp_total[d] += total + gather_total;
    I.dev_finish[d] = I.sim.last_grad_end_s[d] + exposed;
    if (I.dev_finish[d] > t_end) {
      t_end = I.dev_finish[d];
      crit = d;
    }
    // Optimizer step, memory-bound over the parameters updated here (the local shard under
    // ZeRO ≥ 1; expert parameters over expert-DP): Adam, the gradient-norm clipping and the
    // zeroing of the gradients, with the bytes of the implementation (training.optimizer_impl,
    // cost/optimizer_step.cpp; docs/step-time.md "Optimizer step by implementation").
    const double updated =
        zero >= 1 && dr > 1 ? phi / dr + I.dev_expert[d] / edp : phi + I.dev_expert[d];
    const double zeroed = ob.per_grad_element *
                          (shard_grads ? phi / dr + I.dev_expert[d] / edp : phi + I.dev_expert[d]);
    const double per_param = ob.per_updated_param;
    optimizer_s = std::max(optimizer_s, (per_param * updated + zeroed) / mem_bw);
  }
  // Tied embeddings: first and last stage all-reduce the embedding gradient (§5.4). The
  // gradient is the DDP buffer's main_grad (finalize_model_grads.py _allreduce_embedding_grad),
  // fp32 with grad_reduce_in_fp32 and the parameter's bf16 otherwise (param_and_grad_buffer.py:
  // grad_dtype = torch.float if grad_reduce_in_fp32 else param.dtype; NVIDIA/Megatron-LM@d98e8a64).
  double tied_s = 0;
  if ((pb.model.tied_embeddings || pb.model.mtp_layers > 0) && P > 1) {  // MTP: docs/moe.md
    const long long last = (P - 1) * stride;
    const GroupShape g{2, last < ndom ? 2 : 1, last < ndom ? 1 : 2};
    tied_s = collective_time(Collective::kAllReduce, grad_elem * cc.embed.params, g, I.links);
  }
  // Gradient-norm all-reduce of one fp32 scalar over the whole job (Megatron reduces the
  // squared norm over the model-parallel and data-parallel groups): latency-bound.
  const double gradnorm_s =
      collective_time(Collective::kAllReduce, 4.0, group_shape(c.gpus, 1, ndom), I.links);
  // Straggler term (docs/step-time.md "Synchronisation"): every rank waits at the step's
  // blocking collectives for the slowest of N. With per-rank busy times of relative spread
  // σ (cluster.step_jitter), the expected maximum of N is about μ + σ·μ·√(2 ln N)
  // (extreme value of N Gaussians; MegaScale §5 and PRISM measure this slowest-rank wait).
  const double n_sync = std::max(1.0, double(c.gpus));
  const double straggler_s =
      pb.cluster.step_jitter * I.sim.busy_s[crit] * std::sqrt(2.0 * std::log(n_sync));
  const double t_iter = t_end + optimizer_s + param_gather_exposed + tied_s + gradnorm_s +
                        straggler_s + trn.step_overhead_s;

  // ---- Figures ------------------------------------------------------------------------
  const double n_gpu = c.gpus;
  const double peak_flops = pb.gpu.peak_flop_per_s;
  double f_model =
      I.moe ? moe_model_flops_per_step(pb.model, c.global_batch_size, trn.attention_flops)
            : model_flops_per_step(pb.model, c.global_batch_size, trn.attention_flops);
  f_model += mtp_model_flops_per_step(pb.model, c.global_batch_size, trn.attention_flops, I.moe);
  double recomputed_share = 1.0;  // of the layers, for the recompute FLOPs of partial recompute
  if (partial) {
    int r = 0;
    for (int x : I.stage_recomputed) r += x;
    recomputed_share = double(r) / pb.model.layers;
  }
  double f_hw =
      f_model +
      recomputed_share * (I.moe && c.recompute == Recompute::kFull
                              ? moe_full_recompute_flops_per_step(pb.model, c.global_batch_size)
                              : recompute_flops_per_step(pb.model, c.global_batch_size, c.recompute,
                                                         pb.training.selective_recompute)) +
      (partial ? 0.0  // the MTP blocks are not among the partially recomputed layers
               : mtp_recompute_flops_per_step(pb.model, c.global_batch_size, c.recompute,
                                              pb.training.selective_recompute, I.moe));
  // A pruned replay (training.recompute_skip_fc2) does not run FC2 again (items.cpp).
  if (!I.moe && c.recompute == Recompute::kFull && pb.training.recompute_skip_fc2)
    f_hw -= recomputed_share * skipped_fc2_flops_per_step(pb.model, c.global_batch_size);
  e.feasible = true;
  e.reason = Infeasible::kNone;
  e.iteration_time_s = t_iter;
  e.mfu = f_model / (t_iter * n_gpu * peak_flops);
  e.hfu = f_hw / (t_iter * n_gpu * peak_flops);
  e.tflops_per_gpu = f_model / (t_iter * n_gpu) / 1e12;
  e.tokens_per_s = double(c.global_batch_size) * pb.model.seq_length / t_iter;
  e.bubble_fraction = std::max(0.0, I.sim.bubble_fraction);  // no negative rounding noise
  e.peak_memory_gb = peak / 1e9;
  e.pipeline_s = I.sim.time_s;
  e.optimizer_s = optimizer_s;
  e.compute_s = M * I.dev_compute[crit];
  e.tp_comm_s = M * I.dev_tp[crit];
  e.cp_comm_s = M * I.dev_cp[crit];
  double pp_s = 0;
  if (blocking) {
    for (int s = 0; s < S; ++s) {
      if (dev_of(s) != crit) continue;
      if (s + 1 < S) pp_s += I.hop_s[s];
      if (s > 0) pp_s += I.hop_s[s - 1];
    }
  }
  e.pp_comm_s = M * pp_s;
  e.dp_comm_s = I.dev_dp_inline[crit] + I.dev_dp_exposed[crit] + tied_s + param_gather_exposed;
  e.critical_rank = crit;
  {
    // Totals on the critical rank: its items' whole TP / CP time, every hop it sends over.
    double tp_all = 0, cp_all = 0, hops = 0;
    for (int s = 0; s < S; ++s) {
      if (dev_of(s) != crit) continue;
      for (int i = bounds[s]; i < bounds[s + 1]; ++i) {
        tp_all += item(i).tp_total_s;
        cp_all += item(i).cp_total_s;
      }
      if (s + 1 < S) hops += I.hop_s[s];
      if (s > 0) hops += I.hop_s[s - 1];
    }
    e.tp_comm_total_s = M * tp_all;
    e.cp_comm_total_s = M * cp_all;
    e.pp_comm_total_s = M * hops;
    e.dp_comm_total_s = std::max(e.dp_comm_s, I.dev_dp_total[crit] + tied_s);
  }
  if (I.opt.want_breakdown)
    fill_breakdown(I, cc, bounds, crit, tied_s, gradnorm_s, param_gather_exposed, optimizer_s,
                   straggler_s, grad_pass_item);

  e.stages.clear();
  if (I.opt.want_stages) {
    e.stages.reserve(S);
    for (int s = 0; s < S; ++s) {
      StageResult r;
      r.stage = s;
      r.pipeline_rank = dev_of(s);
      r.first_layer = bounds[s];
      r.last_layer = bounds[s + 1] - 1;
      r.time_s = si.fwd_s[s] + si.bwd_s[s] + si.wgt_s[s];
      const int d = dev_of(s);
      r.memory_gb = I.dev_mem[d] / 1e9;
      // The breakdown of dev_mem (place()): static items, the simulated activation peak split
      // into its W-state part and the rest, the largest transient and the workspace.
      r.weights_gb = I.dev_weight[d] / 1e9;
      r.gradients_gb = I.dev_grad[d] / 1e9;
      r.optimizer_gb = I.dev_optim[d] / 1e9;
      // (min: the two sums of the peak state may round differently when it holds only W state)
      const double wstate = std::min(I.sim.peak_wkeep_bytes[d], I.sim.peak_act_bytes[d]);
      r.wstate_gb = wstate / 1e9;
      r.activations_gb = (I.sim.peak_act_bytes[d] - wstate) / 1e9;
      r.transient_gb = I.dev_transient[d] / 1e9;
      if (I.dev_step[d] > I.sim.peak_act_bytes[d] + I.dev_transient[d]) {
        // The peak is the optimizer step: the fp32 gradient copy, no activations.
        r.optimizer_gb = (I.dev_optim[d] + I.dev_step[d]) / 1e9;
        r.wstate_gb = r.activations_gb = r.transient_gb = 0;
      }
      r.workspace_gb = cc.extra_bytes / 1e9;
      r.recomputed_layers = partial
                                ? I.stage_recomputed[s]
                                : (c.recompute == Recompute::kFull
                                       ? std::max(0, std::min(bounds[s + 1], pb.model.layers + 1) -
                                                         std::max(bounds[s], 1))
                                       : 0);
      e.stages.push_back(r);
    }
  }
}

Evaluation evaluate(const Problem& problem, const Candidate& c, EvalOptions options) {
  Evaluator ev(problem, options);
  return ev.evaluate(c);
}

std::string explain(const Evaluation& e) {
  if (e.feasible) return {};
  char buf[256];
  switch (e.reason) {
    case Infeasible::kMemory:
      if (e.headroom_bytes > 0) {
        std::snprintf(buf, sizeof buf,
                      "pipeline rank %d needs %.1f GB, the GPU has %.4g GB less %.3g GB headroom",
                      e.worst_rank, e.needed_bytes / 1e9,
                      (e.capacity_bytes + e.headroom_bytes) / 1e9, e.headroom_bytes / 1e9);
      } else {
        std::snprintf(buf, sizeof buf, "pipeline rank %d needs %.1f GB, the GPU has %.4g GB",
                      e.worst_rank, e.needed_bytes / 1e9, e.capacity_bytes / 1e9);
      }
      return buf;
    case Infeasible::kTooFewLayers:
      return "more pipeline stages than layers to place";
    case Infeasible::kSchedule:
      return "the schedule cannot be built for this shape (interleaving needs M divisible by PP)";
    case Infeasible::kNone:
      break;
  }
  return "infeasible";
}

}  // namespace ppsearch
