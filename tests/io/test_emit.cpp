// Launch-config emitter (emit.hpp) on hand-built rows: every schedule, recompute mode, SP,
// ZeRO 0-3, VPP > 1, CP > 1, even and uneven partitions. Every flag or key printed must be a
// name the pinned framework version accepts (tests/emit/*.txt, read from its parser), the
// printed lines must be exactly the reported names, and rows a framework cannot run are
// refused with a reason and no flag. The e2e test tests/e2e/emit.sh does the round trip.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "ppsearch/cli/emit.hpp"
#include "ppsearch/io/config_file.hpp"
#include "ppsearch/spec/stacks.hpp"

namespace ppsearch {
namespace {

std::set<std::string> pinned(const char* file) {
  std::ifstream in(std::string(PPSEARCH_SOURCE_DIR) + "/tests/emit/" + file);
  std::set<std::string> names;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') names.insert(line);
  return names;
}

const std::set<std::string>& pinned_for(LaunchFormat f) {
  static const std::set<std::string> meg = pinned("megatron_args.txt");
  static const std::set<std::string> nemo = pinned("nemo_keys.txt");
  static const std::set<std::string> tt = pinned("torchtitan_keys.txt");
  return f == LaunchFormat::kMegatron ? meg : f == LaunchFormat::kNemo ? nemo : tt;
}

// The names on the printed (non-comment) lines: the first word of a line (Megatron-LM,
// torchtitan), or the key before '=' (NeMo).
std::vector<std::string> printed_names(LaunchFormat f, const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    out.push_back(f == LaunchFormat::kNemo ? line.substr(0, line.find('='))
                                           : line.substr(0, line.find(' ')));
  }
  return out;
}

// The default model and cluster.
Problem llama70b() {
  LoadRequest req;
  req.sets = {"search.gpus=128"};
  return load_problem(req);
}

ResultRow row(int tp, int pp, int cp, int dp, int vpp, int mbs, Schedule s, Recompute r, int sp,
              int zero) {
  ResultRow x{};
  x.gpus = tp * pp * cp * dp;
  x.tp = tp, x.pp = pp, x.cp = cp, x.dp = dp, x.vpp = vpp, x.mbs = mbs;
  x.global_batch_size = 256;
  x.num_microbatches = 256 / (dp * mbs);
  x.schedule = static_cast<std::uint8_t>(s);
  x.recompute = static_cast<std::uint8_t>(r);
  x.sequence_parallel = static_cast<std::uint8_t>(sp);
  x.zero_stage = static_cast<std::int8_t>(zero);
  x.feasible = 1;
  return x;
}

// An even split of L layers over n virtual stages, embedding first and head last.
std::vector<std::pair<int, int>> even(int L, int n) {
  std::vector<std::pair<int, int>> st;
  for (int i = 0; i < n; ++i)
    st.emplace_back(i == 0 ? 0 : 1 + i * L / n, i == n - 1 ? L + 1 : (i + 1) * L / n);
  return st;
}

struct Case {
  ResultRow r;
  std::vector<std::pair<int, int>> stages;
};

std::vector<Case> cases(int L) {
  using S = Schedule;
  using R = Recompute;
  std::vector<Case> c;
  for (int zero = 0; zero <= 3; ++zero)
    for (R rc : {R::kNone, R::kSelective, R::kFull})
      c.push_back({row(1, 1, 2, 64, 1, 1, S::k1F1B, rc, 0, zero), {{0, L + 1}}});
  for (S s : {S::kGPipe, S::k1F1B, S::kZBH1})
    for (R rc : {R::kNone, R::kFull}) c.push_back({row(4, 8, 1, 4, 1, 1, s, rc, 1, 1), even(L, 8)});
  c.push_back({row(8, 4, 1, 4, 4, 1, S::kInterleaved1F1B, R::kSelective, 1, 1), even(L, 16)});
  c.push_back({row(2, 4, 2, 8, 2, 1, S::kInterleaved1F1B, R::kNone, 0, 0), even(L, 8)});
  // Uneven: one layer fewer on the first and last stage.
  std::vector<std::pair<int, int>> uneven = {{0, 9},   {10, 20}, {21, 31}, {32, 42},
                                             {43, 53}, {54, 64}, {65, 75}, {76, L + 1}};
  c.push_back({row(8, 8, 1, 2, 1, 1, S::k1F1B, R::kNone, 1, 0), uneven});
  c.push_back({row(8, 8, 1, 2, 1, 1, S::kGPipe, R::kNone, 0, 0), uneven});
  return c;
}

TEST(Emit, EveryNameIsInThePinnedList) {
  const Problem p = llama70b();
  ASSERT_EQ(p.model.layers, 80);
  for (LaunchFormat f : {LaunchFormat::kMegatron, LaunchFormat::kNemo, LaunchFormat::kTorchtitan}) {
    const auto& ok = pinned_for(f);
    ASSERT_GT(ok.size(), 20u) << to_string(f);
    int runnable = 0;
    for (const Case& c : cases(p.model.layers)) {
      const LaunchConfig lc = emit_launch_config(f, p, c.r, c.stages);
      EXPECT_EQ(printed_names(f, lc.text), lc.names) << lc.text;
      for (const std::string& n : lc.names)
        EXPECT_TRUE(ok.count(n)) << to_string(f) << ": " << n << " is not accepted\n" << lc.text;
      runnable += lc.runnable;
      if (lc.runnable) {
        EXPECT_FALSE(lc.names.empty()) << lc.text;
      }
    }
    EXPECT_GT(runnable, 5) << to_string(f);
  }
}

TEST(Emit, MegatronAndNemoRefuseZero23WithAReason) {
  const Problem p = llama70b();
  for (int zero : {2, 3})
    for (LaunchFormat f : {LaunchFormat::kMegatron, LaunchFormat::kNemo}) {
      const LaunchConfig lc = emit_launch_config(
          f, p, row(1, 1, 2, 64, 1, 1, Schedule::k1F1B, Recompute::kNone, 0, zero), {{0, 81}});
      EXPECT_FALSE(lc.runnable);
      EXPECT_TRUE(lc.names.empty());
      EXPECT_TRUE(printed_names(f, lc.text).empty()) << lc.text;
      EXPECT_NE(lc.text.find("NOT RUNNABLE: ZeRO stage " + std::to_string(zero)),
                std::string::npos);
      EXPECT_NE(lc.text.find("torchtitan"), std::string::npos);
    }
  // torchtitan runs it as FSDP.
  const LaunchConfig tt = emit_launch_config(
      LaunchFormat::kTorchtitan, p, row(1, 1, 2, 64, 1, 1, Schedule::k1F1B, Recompute::kNone, 0, 3),
      {{0, 81}});
  EXPECT_TRUE(tt.runnable);
  EXPECT_NE(tt.text.find("--parallelism.data_parallel_shard_degree 64"), std::string::npos);
  EXPECT_NE(tt.text.find("--parallelism.fsdp_reshard_after_forward always"), std::string::npos);
}

TEST(Emit, MegatronCarriesEveryKnobOfTheRow) {
  const Problem p = llama70b();
  const LaunchConfig lc = emit_launch_config(
      LaunchFormat::kMegatron, p,
      row(8, 4, 2, 2, 4, 2, Schedule::kInterleaved1F1B, Recompute::kFull, 1, 1), even(80, 16));
  ASSERT_TRUE(lc.runnable) << lc.text;
  for (const char* want : {"--tensor-model-parallel-size 8",
                           "--pipeline-model-parallel-size 4",
                           "--context-parallel-size 2",
                           "--num-virtual-stages-per-pipeline-rank 4",
                           "--sequence-parallel",
                           "--use-distributed-optimizer",
                           "--overlap-grad-reduce",
                           "--overlap-param-gather",
                           "--recompute-granularity full",
                           "--recompute-method uniform",
                           "--recompute-num-layers 1",
                           "--micro-batch-size 2",
                           "--global-batch-size 256",
                           "--num-layers 80",
                           "--group-query-attention",
                           "--num-query-groups 8",
                           "--swiglu",
                           "--untie-embeddings-and-output-weights",
                           "--bf16",
                           "--seq-length 8192"})
    EXPECT_NE(lc.text.find(want), std::string::npos) << want << "\n" << lc.text;
  // Uneven partition: the layout flag, which also carries the vpp size.
  const LaunchConfig un =
      emit_launch_config(LaunchFormat::kMegatron, p,
                         row(8, 2, 1, 8, 2, 1, Schedule::kInterleaved1F1B, Recompute::kNone, 1, 0),
                         {{0, 19}, {20, 40}, {41, 61}, {62, 81}});
  EXPECT_NE(un.text.find("--pipeline-model-parallel-layout \"Et*19|t*21|t*21|t*19L\""),
            std::string::npos)
      << un.text;
  EXPECT_EQ(un.text.find("--num-virtual-stages-per-pipeline-rank"), std::string::npos);
  EXPECT_EQ(un.text.find("--use-distributed-optimizer"), std::string::npos);
}

TEST(Emit, SchedulesAFrameworkLacksAreRefused) {
  const Problem p = llama70b();
  const auto zb = row(4, 8, 1, 4, 1, 1, Schedule::kZBH1, Recompute::kNone, 1, 1);
  const auto gp = row(4, 8, 1, 4, 1, 1, Schedule::kGPipe, Recompute::kNone, 1, 1);
  for (LaunchFormat f : {LaunchFormat::kMegatron, LaunchFormat::kNemo, LaunchFormat::kTorchtitan})
    EXPECT_FALSE(emit_launch_config(f, p, zb, even(80, 8)).runnable) << to_string(f);
  EXPECT_FALSE(emit_launch_config(LaunchFormat::kMegatron, p, gp, even(80, 8)).runnable);
  const LaunchConfig tt = emit_launch_config(LaunchFormat::kTorchtitan, p, gp, even(80, 8));
  EXPECT_TRUE(tt.runnable);
  EXPECT_NE(tt.text.find("--parallelism.pipeline_parallel_schedule GPipe"), std::string::npos);
  // With PP = 1 the schedule does not matter: every framework runs the row.
  const auto pp1 = row(8, 1, 1, 16, 1, 1, Schedule::kZBH1, Recompute::kNone, 1, 1);
  EXPECT_TRUE(emit_launch_config(LaunchFormat::kMegatron, p, pp1, {{0, 81}}).runnable);
}

TEST(Emit, PartialRecomputeIsMegatronsBlockMethod) {
  const Problem p = llama70b();
  auto r = row(4, 4, 1, 8, 1, 1, Schedule::k1F1B, Recompute::kFull, 1, 1);
  r.recompute_num_layers = 3;
  LaunchConfig lc = emit_launch_config(LaunchFormat::kMegatron, p, r, even(80, 4));
  EXPECT_NE(lc.text.find("--recompute-method block \\\n--recompute-num-layers 3"),
            std::string::npos)
      << lc.text;
  EXPECT_FALSE(lc.approximated);
  // A count per stage: the largest, said to be approximated.
  r.recompute_num_layers = -1;
  lc = emit_launch_config(LaunchFormat::kMegatron, p, r, even(80, 4), {5, 2, 0, 0});
  EXPECT_NE(lc.text.find("--recompute-num-layers 5"), std::string::npos) << lc.text;
  EXPECT_TRUE(lc.approximated);
  // No stage recomputes anything: no recompute flag at all.
  lc = emit_launch_config(LaunchFormat::kNemo, p, r, even(80, 4), {0, 0, 0, 0});
  EXPECT_NE(lc.text.find("model.recompute_granularity=null"), std::string::npos) << lc.text;
  for (const std::string& n : lc.names) EXPECT_TRUE(pinned_for(LaunchFormat::kNemo).count(n)) << n;
}

// The default model under a stack profile (src/spec/stacks.cpp).
Problem llama70b_on(const std::string& stack) {
  LoadRequest req;
  req.sets = {"search.gpus=128", "training.stack=" + stack};
  return load_problem(req);
}

bool has(const LaunchConfig& lc, const std::string& s) {
  return lc.text.find(s) != std::string::npos;
}

// TP overlap is launched exactly where the cost model charges it: the stack's pipelined TP
// collectives (training.tp_comm_overlap) or the cluster's hidden fraction, and only with
// sequence parallelism, which Megatron-LM and Transformer Engine need for it.
TEST(Emit, TpCommOverlapOnlyWhenModelled) {
  Problem p = llama70b();
  p.training.tp_comm_overlap = false;
  p.cluster.tp_comm_overlap = 0;
  const auto sp = row(8, 1, 1, 16, 1, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const auto nosp = row(8, 1, 1, 16, 1, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  EXPECT_FALSE(
      has(emit_launch_config(LaunchFormat::kMegatron, p, sp, {{0, 81}}), "--tp-comm-overlap"));
  EXPECT_TRUE(has(emit_launch_config(LaunchFormat::kNemo, p, sp, {{0, 81}}),
                  "model.tp_comm_overlap=false"));
  EXPECT_FALSE(has(emit_launch_config(LaunchFormat::kTorchtitan, p, sp, {{0, 81}}),
                   "--compile.enable_async_tensor_parallel"));
  Problem stack = p, frac = p;
  stack.training.tp_comm_overlap = true;  // as nemo-24.x / nemo-25.x / tuned set it
  frac.cluster.tp_comm_overlap = 0.5;
  for (const Problem* q : {&stack, &frac}) {
    for (LaunchFormat f :
         {LaunchFormat::kMegatron, LaunchFormat::kNemo, LaunchFormat::kTorchtitan}) {
      const LaunchConfig lc = emit_launch_config(f, *q, sp, {{0, 81}});
      for (const std::string& n : lc.names) EXPECT_TRUE(pinned_for(f).count(n)) << n;
      const LaunchConfig off = emit_launch_config(f, *q, nosp, {{0, 81}});
      // The cluster's fraction is modelled without SP too, but no framework launches it; the
      // stack's overlap is not modelled without SP (evaluate.cpp), so nothing is missing.
      if (q == &frac) {
        EXPECT_TRUE(off.approximated) << off.text;
      } else if (f != LaunchFormat::kTorchtitan) {  // torchtitan approximates ZeRO-1 anyway
        EXPECT_FALSE(off.approximated) << off.text;
      }
      if (f == LaunchFormat::kMegatron) {
        EXPECT_TRUE(has(lc, "\n--tp-comm-overlap")) << lc.text;
        EXPECT_FALSE(has(off, "\n--tp-comm-overlap")) << off.text;
      } else if (f == LaunchFormat::kNemo) {
        EXPECT_TRUE(has(lc, "model.tp_comm_overlap=true")) << lc.text;
        EXPECT_TRUE(has(off, "model.tp_comm_overlap=false")) << off.text;
      } else {
        // Async TP needs torch.compile.
        EXPECT_TRUE(has(lc, "\n--compile.enable \\\n--compile.enable_async_tensor_parallel"))
            << lc.text;
        EXPECT_FALSE(has(off, "--compile.enable_async_tensor_parallel")) << off.text;
      }
    }
  }
}

// training.tp_fp8_reduce_scatter has no framework flag (it is the fp8_buf field of the
// Userbuffers config): where it changed the cost (FP8 delayed scaling, TP with SP and TP overlap)
// each format says how to launch it, as an approximation; elsewhere it says nothing.
TEST(Emit, Fp8ReduceScatterIsSaidWhereItWasCosted) {
  Problem p = llama70b();
  p.training.precision = "fp8";
  p.training.fp8_recipe = Fp8Recipe::kDelayed;
  p.training.tp_comm_overlap = true;
  const auto sp = row(8, 1, 1, 16, 1, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const char* how[] = {"--tp-comm-overlap-cfg", "PipelineOverlapCfg(..., fp8_buf=True)",
                       "torchtitan has no such option"};
  int i = 0;
  for (LaunchFormat f : {LaunchFormat::kMegatron, LaunchFormat::kNemo, LaunchFormat::kTorchtitan}) {
    const char* said = how[i++];
    EXPECT_FALSE(has(emit_launch_config(f, p, sp, {{0, 81}}), "tp_fp8_reduce_scatter"));
    Problem q = p;
    q.training.tp_fp8_reduce_scatter = true;
    const LaunchConfig lc = emit_launch_config(f, q, sp, {{0, 81}});
    EXPECT_TRUE(has(lc, "approximated: training.tp_fp8_reduce_scatter")) << lc.text;
    EXPECT_TRUE(has(lc, said)) << lc.text;
    EXPECT_TRUE(lc.approximated);
    // Current scaling quantises after the GEMM: the key costs nothing there and is not said.
    Problem c = q;
    c.training.fp8_recipe = Fp8Recipe::kCurrent;
    EXPECT_FALSE(has(emit_launch_config(f, c, sp, {{0, 81}}), "tp_fp8_reduce_scatter"));
    Problem off = q;
    off.training.tp_comm_overlap = false;
    EXPECT_FALSE(has(emit_launch_config(f, off, sp, {{0, 81}}), "tp_fp8_reduce_scatter"));
  }
}

// training.tp_only_amax_red (docs/precision.md "Amax reductions"): NeMo / Megatron-Bridge take the
// TransformerConfig field as an override; Megatron-LM has no flag for it, so the launch says so.
// Only delayed scaling reduces amaxes across ranks: elsewhere nothing is said.
TEST(Emit, TpOnlyAmaxReductionIsLaunchedOrSaid) {
  Problem p = llama70b();
  p.training.precision = "fp8";
  p.training.fp8_recipe = Fp8Recipe::kDelayed;
  const auto sp = row(8, 1, 1, 16, 1, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  for (LaunchFormat f : {LaunchFormat::kMegatron, LaunchFormat::kNemo}) {
    EXPECT_FALSE(has(emit_launch_config(f, p, sp, {{0, 81}}), "tp_only_amax_red"));
  }
  Problem q = p;
  q.training.tp_only_amax_red = true;
  const LaunchConfig nemo = emit_launch_config(LaunchFormat::kNemo, q, sp, {{0, 81}});
  EXPECT_TRUE(has(nemo, "model.tp_only_amax_red")) << nemo.text;
  const LaunchConfig mlm = emit_launch_config(LaunchFormat::kMegatron, q, sp, {{0, 81}});
  EXPECT_TRUE(has(mlm, "approximated: training.tp_only_amax_red")) << mlm.text;
  EXPECT_TRUE(mlm.approximated);
  Problem c = q;
  c.training.fp8_recipe = Fp8Recipe::kCurrent;
  for (LaunchFormat f : {LaunchFormat::kMegatron, LaunchFormat::kNemo}) {
    EXPECT_FALSE(has(emit_launch_config(f, c, sp, {{0, 81}}), "tp_only_amax_red"));
  }
}

// training.tp_symm_mem (docs/step-time.md "Async TP's own passes"): a TP overlap costed as the
// other framework's kind is launched as an approximation that says which way the time moves;
// costed as the framework's own kind, nothing is said.
TEST(Emit, TpOverlapKindIsSaidWhereItDiffers) {
  Problem p = llama70b();
  p.training.tp_comm_overlap = true;
  const auto sp = row(8, 1, 1, 16, 1, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  for (LaunchFormat f : {LaunchFormat::kMegatron, LaunchFormat::kNemo, LaunchFormat::kTorchtitan}) {
    const bool titan = f == LaunchFormat::kTorchtitan;
    for (bool symm : {false, true}) {
      Problem q = p;
      q.training.tp_symm_mem = symm;
      const LaunchConfig lc = emit_launch_config(f, q, sp, {{0, 81}});
      const bool said = has(lc, "training.tp_symm_mem");
      EXPECT_EQ(said, symm != titan) << lc.text;
      if (said) {
        EXPECT_TRUE(lc.approximated);
        EXPECT_TRUE(has(lc, titan ? "slower than modelled" : "faster than modelled")) << lc.text;
      }
    }
  }
  // Without the overlap (or without SP) no kind was costed.
  Problem off = p;
  off.training.tp_comm_overlap = false;
  off.training.tp_symm_mem = true;
  for (LaunchFormat f : {LaunchFormat::kMegatron, LaunchFormat::kNemo, LaunchFormat::kTorchtitan})
    EXPECT_FALSE(has(emit_launch_config(f, off, sp, {{0, 81}}), "training.tp_symm_mem"));
}

// torchtitan runs FSDP2 and PyTorch's non-reentrant checkpoint: a row costed with another FSDP's
// gradient passes, or with full recomputation replaying FC2, is launched as an approximation
// that says so; a row costed with torchtitan's own profile is not.
TEST(Emit, TorchtitanSaysWhereItsFsdpAndCheckpointDifferFromTheCosted) {
  const auto z3 = row(1, 1, 2, 64, 1, 1, Schedule::k1F1B, Recompute::kFull, 0, 3);
  Problem nemo = llama70b();  // nemo-25.x: fsdp_impl none, the replay runs FC2
  const LaunchConfig a = emit_launch_config(LaunchFormat::kTorchtitan, nemo, z3, {{0, 81}});
  EXPECT_TRUE(has(a, "approximated: training.fsdp_impl = none was costed")) << a.text;
  EXPECT_TRUE(has(a, "stops each replay before FC2")) << a.text;
  Problem titan = llama70b();
  titan.training.stack = "torchtitan-2024";
  ASSERT_TRUE(apply_stack(&titan, {}));
  const LaunchConfig b = emit_launch_config(LaunchFormat::kTorchtitan, titan, z3, {{0, 81}});
  EXPECT_FALSE(has(b, "training.fsdp_impl")) << b.text;
  EXPECT_FALSE(has(b, "stops each replay before FC2")) << b.text;
  // ZeRO-1 has no per-micro-batch reduction, selective recomputation no FC2 replay.
  const auto z1 = row(1, 1, 2, 64, 1, 1, Schedule::k1F1B, Recompute::kSelective, 0, 1);
  const LaunchConfig c = emit_launch_config(LaunchFormat::kTorchtitan, nemo, z1, {{0, 81}});
  EXPECT_FALSE(has(c, "training.fsdp_impl")) << c.text;
  EXPECT_FALSE(has(c, "stops each replay before FC2")) << c.text;
}

// Every stack profile's settings that a framework has a flag for are launched with the value
// the cost model used, so the printed command runs the job that was costed (docs/launch.md
// "Stack settings").
TEST(Emit, StackSettingsAreLaunched) {
  const auto inter = row(4, 4, 1, 8, 2, 1, Schedule::kInterleaved1F1B, Recompute::kNone, 1, 1);
  const auto plain = row(4, 4, 1, 8, 1, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  int bf16_grads = 0, fp32_grads = 0, foreach_opt = 0, compiled = 0, eager = 0, exact = 0,
      fused_norms = 0;
  for (const std::string& name : stack_names()) {
    const Problem p = llama70b_on(name);
    const TrainingSpec& t = p.training;
    ASSERT_EQ(t.stack, name);
    bf16_grads += !t.grad_reduce_in_fp32;
    fp32_grads += t.grad_reduce_in_fp32;
    const LaunchConfig meg = emit_launch_config(LaunchFormat::kMegatron, p, inter, even(80, 8));
    const LaunchConfig nemo = emit_launch_config(LaunchFormat::kNemo, p, inter, even(80, 8));
    const LaunchConfig tt = emit_launch_config(LaunchFormat::kTorchtitan, p, plain, even(80, 4));
    for (const LaunchConfig* lc : {&meg, &nemo, &tt}) ASSERT_TRUE(lc->runnable) << lc->text;
    for (const std::string& n : meg.names)
      EXPECT_TRUE(pinned_for(LaunchFormat::kMegatron).count(n)) << n;
    for (const std::string& n : nemo.names)
      EXPECT_TRUE(pinned_for(LaunchFormat::kNemo).count(n)) << n;
    for (const std::string& n : tt.names)
      EXPECT_TRUE(pinned_for(LaunchFormat::kTorchtitan).count(n)) << n;
    // Megatron-LM: its defaults are fp32 reduction, unfused cross entropy, overlapped
    // interleaved p2p; each other choice is a flag.
    EXPECT_EQ(has(meg, "--grad-reduce-in-bf16"), !t.grad_reduce_in_fp32) << name;
    EXPECT_EQ(has(meg, "--cross-entropy-loss-fusion"), t.cross_entropy_fusion) << name;
    EXPECT_EQ(has(meg, "--no-overlap-p2p-communication"), !t.p2p_overlap) << name;
    EXPECT_EQ(has(meg, "--overlap-grad-reduce"), t.overlap_grad_reduce) << name;
    EXPECT_EQ(has(meg, "--overlap-param-gather"), t.overlap_param_gather) << name;
    EXPECT_EQ(has(meg, "\n--tp-comm-overlap"), t.tp_comm_overlap) << name;
    // What no Megatron flag sets (the framework's own kernels and optimizer) is named as an
    // approximation whenever it differs from Megatron-LM's (the megatron-core profile); with
    // nothing else approximated for this row, the launch is exact exactly when it agrees.
    const bool engine_same =
        t.attention_efficiency_scale == 1.0 && t.fused_elementwise && !t.triton_attention &&
        !t.split_linears && t.tp_bwd_overlap && t.optimizer_impl == "megatron" &&
        (!t.cross_entropy_fusion || t.cross_entropy_inplace) && t.optimizer_state_dtype != "bf16";
    EXPECT_EQ(meg.approximated, !engine_same) << name << meg.text;
    EXPECT_EQ(nemo.approximated, !engine_same) << name << nemo.text;
    exact += engine_same;
    // Megatron-Bridge: every key explicit.
    EXPECT_TRUE(has(
        nemo, std::string("ddp.grad_reduce_in_fp32=") + (t.grad_reduce_in_fp32 ? "true" : "false")))
        << name;
    EXPECT_TRUE(has(nemo, std::string("model.cross_entropy_loss_fusion=") +
                              (t.cross_entropy_fusion ? "true" : "false")))
        << name;
    EXPECT_TRUE(has(nemo, std::string("model.overlap_p2p_comm=") +
                              (t.p2p_overlap ? "true\nmodel.batch_p2p_comm=false"
                                             : "false\nmodel.batch_p2p_comm=true")))
        << name;
    EXPECT_TRUE(
        has(nemo, std::string("model.tp_comm_overlap=") + (t.tp_comm_overlap ? "true" : "false")))
        << name;
    // torchtitan: reduce dtype, optimizer implementation, compile for fused element-wise ops.
    EXPECT_TRUE(has(tt, std::string("--training.mixed_precision_reduce ") +
                            (t.grad_reduce_in_fp32 ? "float32" : "bfloat16")))
        << name;
    const std::string impl = t.optimizer_impl == "torch-foreach" ? "foreach" : "fused";
    EXPECT_TRUE(has(tt, "--optimizer.implementation " + impl + " \\\n")) << name << tt.text;
    foreach_opt += impl == "foreach";
    const bool compile = t.fused_elementwise || t.tp_comm_overlap;
    EXPECT_TRUE(has(tt, compile ? "\n--compile.enable \\" : "\n--compile.no-enable \\"))
        << name << tt.text;
    compiled += compile;
    eager += !compile;
    // The fused norm of an eager profile is the torch version's, not a flag: a comment says so.
    EXPECT_EQ(has(tt, "# training.fused_norm: "), !compile && t.fused_norm) << name << tt.text;
    fused_norms += !compile && t.fused_norm;
  }
  EXPECT_GT(fused_norms, 0);
  // The profiles cover both sides of every setting checked.
  EXPECT_GT(bf16_grads, 0);
  EXPECT_GT(fp32_grads, 0);
  EXPECT_GT(foreach_opt, 0);
  EXPECT_GT(compiled, 0);
  EXPECT_GT(eager, 0);
  EXPECT_GT(exact, 0);
  EXPECT_LT(exact, static_cast<int>(stack_names().size()));
}

// Megatron-LM refuses --overlap-param-gather without --overlap-grad-reduce (arguments.py): a
// model that overlapped only the gather is launched without it and said to be approximated.
TEST(Emit, ParamGatherOverlapNeedsGradReduceOverlapInMegatron) {
  Problem p = llama70b();
  p.training.overlap_param_gather = true;
  p.training.overlap_grad_reduce = false;
  const auto r = row(4, 1, 2, 16, 1, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const LaunchConfig lc = emit_launch_config(LaunchFormat::kMegatron, p, r, {{0, 81}});
  EXPECT_FALSE(has(lc, "\n--overlap-param-gather")) << lc.text;
  EXPECT_FALSE(has(lc, "\n--overlap-grad-reduce")) << lc.text;
  EXPECT_TRUE(lc.approximated) << lc.text;
  p.training.overlap_grad_reduce = true;
  const LaunchConfig both = emit_launch_config(LaunchFormat::kMegatron, p, r, {{0, 81}});
  EXPECT_TRUE(has(both, "--overlap-grad-reduce \\\n--overlap-param-gather")) << both.text;
  // DP 1 with CP 2 still reduces the gradients (over DP x CP).
  const auto cp_only = row(4, 1, 2, 1, 1, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  EXPECT_TRUE(has(emit_launch_config(LaunchFormat::kMegatron, p, cp_only, {{0, 81}}),
                  "--overlap-grad-reduce"));
  EXPECT_TRUE(has(emit_launch_config(LaunchFormat::kNemo, p, cp_only, {{0, 81}}),
                  "ddp.overlap_grad_reduce=true"));
}

// The optimizer's state dtype: bf16 moments are torchtitan's fused_opt_states_bf16.
TEST(Emit, OptimizerStateDtypeIsLaunched) {
  Problem p = llama70b();
  p.training.optimizer_state_dtype = "bf16-moments";
  const auto r = row(4, 1, 1, 32, 1, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  EXPECT_TRUE(has(emit_launch_config(LaunchFormat::kTorchtitan, p, r, {{0, 81}}),
                  "--optimizer.implementation fused_opt_states_bf16"));
  EXPECT_TRUE(
      has(emit_launch_config(LaunchFormat::kMegatron, p, r, {{0, 81}}), "--exp-avg-dtype bf16"));
  p.training.optimizer_state_dtype = "bf16";  // Apex distributed Adam: no flag anywhere
  for (LaunchFormat f : {LaunchFormat::kMegatron, LaunchFormat::kNemo, LaunchFormat::kTorchtitan})
    EXPECT_TRUE(emit_launch_config(f, p, r, {{0, 81}}).approximated) << to_string(f);
}

// The MoE recipe features that were costed are launched (src/cost/moe_recipe.cpp): the expert
// all-to-all overlap where Megatron-Core accepts it (TransformerConfig.__post_init__: EP > 1, a
// virtual pipeline size with PP > 1, no full recompute, alltoall/flex dispatcher), and said to be
// approximated where it does not.
TEST(Emit, MoeA2aOverlapIsLaunchedWhereMegatronCoreRunsIt) {
  LoadRequest req;
  req.model = "deepseek-v3";
  req.sets = {"search.gpus=256", "training.moe_a2a_overlap=0.5"};
  const Problem p = load_problem(req);
  const int L = p.model.layers;
  auto ok = row(1, 1, 1, 256, 1, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  ok.ep = 32;
  ok.etp = 1;
  for (LaunchFormat f : {LaunchFormat::kMegatron, LaunchFormat::kNemo}) {
    const LaunchConfig lc = emit_launch_config(f, p, ok, {{0, L + 1}});
    ASSERT_TRUE(lc.runnable) << lc.text;
    for (const std::string& n : lc.names) EXPECT_TRUE(pinned_for(f).count(n)) << n;
    EXPECT_TRUE(has(lc, f == LaunchFormat::kMegatron
                            ? "--overlap-moe-expert-parallel-comm"
                            : "model.overlap_moe_expert_parallel_comm=true"))
        << lc.text;
    EXPECT_TRUE(has(lc, f == LaunchFormat::kMegatron ? "--delay-wgrad-compute"
                                                     : "model.delay_wgrad_compute=true"))
        << lc.text;
  }
  auto blocked = [&](ResultRow r, const std::vector<std::pair<int, int>>& st) {
    for (LaunchFormat f : {LaunchFormat::kMegatron, LaunchFormat::kNemo}) {
      const LaunchConfig lc = emit_launch_config(f, p, r, st);
      EXPECT_FALSE(has(lc, "overlap-moe-expert-parallel-comm")) << lc.text;
      EXPECT_FALSE(has(lc, "overlap_moe_expert_parallel_comm=true")) << lc.text;
      EXPECT_TRUE(has(lc, "approximated: training.moe_a2a_overlap")) << lc.text;
    }
  };
  auto no_ep = ok;
  no_ep.ep = 1;
  blocked(no_ep, {{0, L + 1}});
  auto full = ok;
  full.recompute = static_cast<std::uint8_t>(Recompute::kFull);
  blocked(full, {{0, L + 1}});
  auto pp_no_v = row(1, 4, 1, 64, 1, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  pp_no_v.ep = 32;
  pp_no_v.etp = 1;
  blocked(pp_no_v, {{0, 16}, {17, 32}, {33, 48}, {49, L + 1}});
  // Without the overlap costed, nothing is printed for it.
  Problem none = p;
  none.training.moe_a2a_overlap = 0;
  EXPECT_FALSE(has(emit_launch_config(LaunchFormat::kMegatron, none, ok, {{0, L + 1}}),
                   "overlap-moe-expert-parallel-comm"));
}

// FP8 attention and TE's fused grouped MLP (MXFP8 on Blackwell) as the recipes set them: NeMo
// keys; Megatron-LM has the op-fuser flag but no flag for FP8 attention (approximated).
TEST(Emit, Fp8AttentionAndFusedGroupedMlpAreLaunched) {
  LoadRequest req;
  req.model = "deepseek-v3";
  req.cluster = "gb200-nvl72";
  req.sets = {"search.gpus=256", "training.precision=fp8", "training.fp8_recipe=mxfp8",
              "training.fp8_attention=true", "training.moe_fused_grouped_mlp=true"};
  const Problem p = load_problem(req);
  auto r = row(1, 1, 1, 256, 1, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  r.ep = 32;
  r.etp = 1;
  const int L = p.model.layers;
  const LaunchConfig nemo = emit_launch_config(LaunchFormat::kNemo, p, r, {{0, L + 1}});
  EXPECT_TRUE(has(nemo, "model.fp8_dot_product_attention=true")) << nemo.text;
  EXPECT_TRUE(has(nemo, "model.use_transformer_engine_op_fuser=true")) << nemo.text;
  const LaunchConfig meg = emit_launch_config(LaunchFormat::kMegatron, p, r, {{0, L + 1}});
  EXPECT_TRUE(has(meg, "--use-transformer-engine-op-fuser")) << meg.text;
  EXPECT_TRUE(has(meg, "approximated: training.fp8_attention")) << meg.text;
  for (LaunchFormat f : {LaunchFormat::kMegatron, LaunchFormat::kNemo})
    for (const std::string& n : emit_launch_config(f, p, r, {{0, L + 1}}).names)
      EXPECT_TRUE(pinned_for(f).count(n)) << n;
  // Per-tensor FP8: the fused grouped MLP is not active, so no flag.
  Problem cs = p;
  cs.training.fp8_recipe = Fp8Recipe::kCurrent;
  EXPECT_FALSE(has(emit_launch_config(LaunchFormat::kMegatron, cs, r, {{0, L + 1}}),
                   "--use-transformer-engine-op-fuser"));
}

// Megatron-LM asserts CUDA_DEVICE_MAX_CONNECTIONS=1 with TP or CP > 1 before Blackwell: the
// launch says so in a comment (an environment variable, not a flag).
TEST(Emit, MegatronNamesTheConnectionsVariable) {
  const Problem p = llama70b();
  const auto tp = row(2, 1, 1, 64, 1, 1, Schedule::k1F1B, Recompute::kNone, 1, 1);
  const auto cp = row(1, 1, 2, 64, 1, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  const auto dp = row(1, 1, 1, 128, 1, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  EXPECT_TRUE(has(emit_launch_config(LaunchFormat::kMegatron, p, tp, {{0, 81}}),
                  "# environment: CUDA_DEVICE_MAX_CONNECTIONS=1"));
  EXPECT_TRUE(has(emit_launch_config(LaunchFormat::kMegatron, p, cp, {{0, 81}}),
                  "# environment: CUDA_DEVICE_MAX_CONNECTIONS=1"));
  EXPECT_FALSE(has(emit_launch_config(LaunchFormat::kMegatron, p, dp, {{0, 81}}),
                   "CUDA_DEVICE_MAX_CONNECTIONS"));
}

// Multi-token prediction: the flag that builds the modules ppsearch costed on the last stage, and
// in a layout the 'm' before the loss (Megatron-LM pipeline_parallel_layer_layout.py).
TEST(Emit, MtpModulesAreLaunched) {
  LoadRequest req;
  req.model = "deepseek-v3";
  req.sets = {"search.gpus=256"};
  const Problem p = load_problem(req);
  ASSERT_EQ(p.model.mtp_layers, 1);
  const int L = p.model.layers;
  auto r = row(1, 4, 1, 64, 1, 1, Schedule::k1F1B, Recompute::kNone, 0, 1);
  r.ep = 32;
  r.etp = 1;
  // An uneven split: the last stage, which also holds the MTP module, gets fewer layers.
  const std::vector<std::pair<int, int>> st = {{0, 16}, {17, 32}, {33, 48}, {49, L + 1}};
  const LaunchConfig meg = emit_launch_config(LaunchFormat::kMegatron, p, r, st);
  ASSERT_TRUE(meg.runnable) << meg.text;
  EXPECT_NE(meg.text.find("--mtp-num-layers 1"), std::string::npos) << meg.text;
  EXPECT_NE(meg.text.find("--pipeline-model-parallel-layout \"Et*16|t*16|t*16|t*" +
                          std::to_string(L - 48) + "mL\""),
            std::string::npos)
      << meg.text;
  const LaunchConfig nemo = emit_launch_config(LaunchFormat::kNemo, p, r, st);
  EXPECT_NE(nemo.text.find("model.mtp_num_layers=1"), std::string::npos) << nemo.text;
  EXPECT_NE(nemo.text.find("mL\""), std::string::npos) << nemo.text;
  for (LaunchFormat f : {LaunchFormat::kMegatron, LaunchFormat::kNemo})
    for (const std::string& n : emit_launch_config(f, p, r, st).names)
      EXPECT_TRUE(pinned_for(f).count(n)) << to_string(f) << ": " << n;
  // Two modules unroll as "m*2"; a dense model's layout has none.
  EXPECT_EQ(megatron_layout({{0, 2}, {3, 5}}, 4, 2), "Et*2|t*2m*2L");
  EXPECT_EQ(megatron_layout({{0, 2}, {3, 5}}, 4), "Et*2|t*2L");
}

TEST(Emit, FormatNames) {
  LaunchFormat f;
  EXPECT_TRUE(parse_launch_format("torchtitan", &f));
  EXPECT_EQ(f, LaunchFormat::kTorchtitan);
  EXPECT_FALSE(parse_launch_format("Megatron", &f));
  EXPECT_FALSE(parse_launch_format("", &f));
}

}  // namespace
}  // namespace ppsearch
