// The explain report, text Gantt and schedule trace (docs/explain.md).
#include "ppsearch/search/explain.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace ppsearch {

namespace {

std::string fmt(const char* f, double a) {
  char buf[128];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

// Seconds with a unit that keeps 3–4 significant digits.
std::string secs(double s) {
  if (!std::isfinite(s)) return "n/a";
  const double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a < 1e-3) return fmt("%.1f us", s * 1e6);
  if (a < 1) return fmt("%.2f ms", s * 1e3);
  return fmt("%.3f s", s);
}

std::string pct(double part, double whole) {
  if (!(whole > 0) || !std::isfinite(part)) return "n/a";
  return fmt("%.1f%%", 100.0 * part / whole);
}

std::string gb(double bytes) { return fmt("%.1f", bytes / 1e9); }
std::string gbv(double gigabytes) { return fmt("%.1f", gigabytes); }

// "E+t*10" style item ranges of one pipeline rank's chunks.
std::string rank_layers(const Evaluation& e, int rank) {
  std::string out;
  for (const StageResult& s : e.stages) {
    if (s.pipeline_rank != rank) continue;
    if (!out.empty()) out += ",";
    out += std::to_string(s.first_layer) + "-" + std::to_string(s.last_layer);
  }
  return out;
}

bool is_backward(OpKind k) { return k == OpKind::kB || k == OpKind::kBW; }

const char* op_letter(OpKind k) {
  switch (k) {
    case OpKind::kF:
      return "F";
    case OpKind::kB:
      return "B";
    case OpKind::kW:
      return "W";
    case OpKind::kBW:
      return "BW";
  }
  return "?";
}

char mb_label(int mb) {
  static const char kLabels[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  return kLabels[mb % 62];
}

// Time in microseconds for the trace, with sub-nanosecond resolution.
std::string us(double s) { return fmt("%.6f", s * 1e6); }

}  // namespace

ExplainedRow explain_candidate(const Problem& problem, const Candidate& c, EvalOptions options) {
  options.want_breakdown = true;
  options.want_stages = true;
  Evaluator ev(problem, options);
  ExplainedRow row;
  ev.evaluate(c, &row.eval);
  if (row.eval.feasible) {
    row.detail = ev.breakdown();
    simulate_traced(row.detail.schedule, &row.ops);
  }
  return row;
}

std::string format_explain(const Problem& problem, const Candidate& c, const ExplainedRow& row) {
  const Evaluation& e = row.eval;
  std::string o;
  o += "Explain: tp=" + std::to_string(c.tp) + " pp=" + std::to_string(c.pp) +
       " cp=" + std::to_string(c.cp) + " dp=" + std::to_string(c.dp) +
       " vpp=" + std::to_string(c.vpp) + " mbs=" + std::to_string(c.mbs) +
       " microbatches=" + std::to_string(c.num_microbatches) +
       " schedule=" + to_string(c.schedule) + " recompute=" + to_string(c.recompute) +
       " sp=" + (c.sp ? "on" : "off") + " zero=" + std::to_string(c.zero) +
       (c.ep > 1 || c.etp > 1  // mixture of experts (docs/moe.md)
            ? " ep=" + std::to_string(c.ep) + " etp=" + std::to_string(c.etp)
            : std::string()) +
       "\n";
  if (!e.feasible || !row.detail.valid) {
    o += "  infeasible (" + std::string(to_string(e.reason)) + "): " + explain(e) + "\n";
    return o;
  }
  const EvalBreakdown& b = row.detail;
  const int P = c.pp;
  const int M = c.num_microbatches;
  const double step = e.iteration_time_s;
  const double cap = b.capacity_bytes;

  // ---- Step time ------------------------------------------------------------------------
  const double tail = step - e.pipeline_s;
  o += "\nStep time " + secs(step) + " = pipeline " + secs(e.pipeline_s) + " (" +
       pct(e.pipeline_s, step) + ") + step tail " + secs(tail) + " (" + pct(tail, step) + ")\n";
  o += "  tail: DP reduction exposed " + secs(b.dp_exposed_s[b.critical_rank]) + " after rank " +
       std::to_string(b.critical_rank) + "'s last backward, optimizer " + secs(e.optimizer_s) +
       ", parameter all-gather " + secs(b.param_gather_exposed_s) + ", tied embedding " +
       secs(b.tied_embedding_s) + ", gradient norm " + secs(b.grad_norm_s) + ", straggler wait " +
       secs(b.straggler_s) + ", fixed per-step overhead " + secs(b.step_overhead_s) +
       (b.deferred_wgrad_rank >= 0
            ? "; deferred output-layer wgrad " + secs(b.deferred_wgrad_s) + " on rank " +
                  std::to_string(b.deferred_wgrad_rank) + " after its last backward"
            : std::string()) +
       "\n";

  // ---- Per pipeline rank ------------------------------------------------------------------
  o += "\nPer pipeline rank (time: forward + backward of one micro-batch, all its chunks):\n";
  char line[512];
  std::snprintf(
      line, sizeof line, "  %4s %-11s %10s %10s %10s %10s %10s %9s %7s  %s\n", "rank", "items",
      "time/mb", "compute", "TP exp", "CP exp", "p2p", "idle", "memory",
      "GB: weights + grads + optimizer + activations + W state + transient + workspace, % of GPU");
  o += line;
  int slow = 0, mem_rank = 0;
  double mean_t = 0;
  std::vector<double> per_mb(P, 0.0);
  for (int d = 0; d < P; ++d) {
    // (every virtual stage on rank d; DualPipe runs each micro-batch through one of its two)
    const int V = P * b.schedule.chunks;
    const double share = b.schedule.kind == ScheduleKind::kDualPipe ? 0.5 : 1.0;
    for (int s = 0; s < V; ++s)
      if (stage_device(b.schedule.kind, P, s) == d)
        per_mb[d] += share * (b.schedule.fwd_s[s] + b.schedule.bwd_s[s] + b.schedule.wgt_s[s]);
    mean_t += per_mb[d] / P;
    if (per_mb[d] > per_mb[slow]) slow = d;
    if (b.memory_bytes[d] > b.memory_bytes[mem_rank]) mem_rank = d;
  }
  for (int d = 0; d < P; ++d) {
    // The per-stage breakdown of the evaluation (docs/memory.md), which sums to the rank's
    // memory; without stage rows, the evaluator's coarser split.
    const auto st = std::find_if(e.stages.begin(), e.stages.end(),
                                 [d](const StageResult& x) { return x.pipeline_rank == d; });
    const std::string mem =
        st != e.stages.end() ? gbv(st->weights_gb) + " + " + gbv(st->gradients_gb) + " + " +
                                   gbv(st->optimizer_gb) + " + " + gbv(st->activations_gb) + " + " +
                                   gbv(st->wstate_gb) + " + " + gbv(st->transient_gb) + " + " +
                                   gbv(st->workspace_gb) + ", " + pct(st->memory_gb * 1e9, cap)
                             : gb(b.static_bytes[d]) + " (static) + " + gb(b.activation_bytes[d]) +
                                   " + " + gb(b.transient_bytes[d]) + " + " + gb(b.reserve_bytes) +
                                   " (reserve), " + pct(b.memory_bytes[d], cap);
    std::snprintf(line, sizeof line, "  %4d %-11s %10s %10s %10s %10s %10s %9s %7s  %s\n", d,
                  rank_layers(e, d).c_str(), secs(per_mb[d]).c_str(), secs(b.compute_s[d]).c_str(),
                  secs(b.tp_exposed_s[d]).c_str(), secs(b.cp_exposed_s[d]).c_str(),
                  secs(b.p2p_s[d]).c_str(), secs(e.pipeline_s - b.busy_s[d]).c_str(),
                  gb(b.memory_bytes[d]).c_str(), mem.c_str());
    o += line;
  }
  o += "  (items: 0 = embedding, 1.." + std::to_string(problem.model.layers) + " = layers, " +
       std::to_string(problem.model.layers + 1) + " = head + loss)\n";

  // ---- Communication ----------------------------------------------------------------------
  const int r = b.critical_rank;
  o += "\nCommunication per step on pipeline rank " + std::to_string(r) +
       " (the last to finish its backward and gradient reduction):\n";
  std::snprintf(line, sizeof line, "  %-4s %12s %12s %12s  %s\n", "kind", "total", "hidden",
                "exposed", "note");
  o += line;
  auto comm_row = [&](const char* kind, double total, double exposed, const char* note) {
    const double hidden = std::max(0.0, total - exposed);
    std::snprintf(line, sizeof line, "  %-4s %12s %12s %12s  %s\n", kind, secs(total).c_str(),
                  secs(hidden).c_str(), secs(exposed).c_str(), note);
    o += line;
  };
  comm_row("TP", e.tp_comm_total_s, e.tp_comm_s,
           c.tp > 1 ? "overlapped with GEMMs where Megatron does" : "tp = 1");
  comm_row("CP", e.cp_comm_total_s, e.cp_comm_s,
           c.cp > 1 ? "ring attention behind the attention kernels" : "cp = 1");
  const bool blocking = b.schedule.mode == P2PMode::kBlocking;
  if (blocking || P == 1) {
    comm_row("PP", e.pp_comm_total_s, e.pp_comm_s,
             P == 1 ? "pp = 1" : "blocking p2p: the sender waits for each transfer");
  } else {
    std::snprintf(line, sizeof line, "  %-4s %12s %12s %12s  %s\n", "PP",
                  secs(e.pp_comm_total_s).c_str(), "-", "-",
                  "async p2p: transfers delay the receiver; their cost is inside the bubble");
    o += line;
  }
  comm_row(
      "DP", e.dp_comm_total_s, e.dp_comm_s,
      c.dp * c.cp > 1 ? "gradient reduction behind the last backward, rest exposed" : "dp = 1");

  // ---- Bubble -------------------------------------------------------------------------------
  const double idle_mean = e.bubble_fraction * e.pipeline_s;
  o += "\nBubble: " + fmt("%.1f%%", 100.0 * e.bubble_fraction) + " of the pipeline time (" +
       secs(idle_mean) + " idle per rank on average, " + std::to_string(M) +
       " micro-batches over " + std::to_string(P) + " ranks";
  if (c.vpp > 1) o += ", " + std::to_string(c.vpp) + " chunks each";
  o += ")\n";

  // ---- Binding constraint ---------------------------------------------------------------------
  o += "\nBinding constraint:\n";
  const double t_slow = per_mb[slow];
  const double comp = b.compute_s[slow], tpx = b.tp_exposed_s[slow], cpx = b.cp_exposed_s[slow];
  const double p2p_blk = blocking ? b.p2p_s[slow] : 0.0;
  const double other = std::max(0.0, t_slow - comp - tpx - cpx);
  std::string what = "compute";
  double top = comp;
  if (tpx > top) what = "exposed TP communication", top = tpx;
  if (cpx > top) what = "exposed CP communication", top = cpx;
  o += "  bottleneck stage: pipeline rank " + std::to_string(slow) + ", " + secs(t_slow) +
       " per micro-batch (" + fmt("%+.1f%%", mean_t > 0 ? 100.0 * (t_slow / mean_t - 1) : 0.0) +
       " against the mean), bound by " + what + ": compute " + pct(comp, t_slow) + ", TP " +
       pct(tpx, t_slow) + ", CP " + pct(cpx, t_slow) + ", other " + pct(other, t_slow);
  if (blocking) o += "; plus blocking p2p " + secs(p2p_blk) + " per micro-batch";
  // Asynchronous p2p is charged in the passes as contention (evaluate.cpp: every pass of a
  // stage pays gpu.comm_contention × the hops it sends and receives, forward and backward), so
  // it sits in "other"; DualPipe's mirrored stages are charged twice and are not split out.
  if (!blocking && P > 1 && c.schedule != Schedule::kDualPipe)
    o += "; other includes p2p kernel contention " +
         secs(2.0 * problem.gpu.comm_contention * b.p2p_s[slow]) + " per micro-batch";
  if (slow < static_cast<int>(b.amax_s.size()) && b.amax_s[slow] > 0)
    o += "; other includes FP8 amax all-reduces (delayed scaling) " + secs(b.amax_s[slow]) +
         " per micro-batch";
  // FSDP's gradient passes (training.fsdp_impl; docs/step-time.md "FSDP's gradient passes and
  // early-stopping recomputation") are charged inside the compute.
  if (slow < static_cast<int>(b.fsdp_passes_s.size()) && b.fsdp_passes_s[slow] > 0)
    o += "; compute includes FSDP's gradient passes (training.fsdp_impl = " +
         problem.training.fsdp_impl + ") " + secs(b.fsdp_passes_s[slow]) + " per micro-batch";
  o += "\n";
  const double mem_share = b.memory_bytes[mem_rank] / cap;
  o += "  memory: pipeline rank " + std::to_string(mem_rank) + " needs " +
       gb(b.memory_bytes[mem_rank]) + " of " + gb(cap) + " GB (" + fmt("%.0f%%", 100 * mem_share) +
       ", headroom " + gb(cap - b.memory_bytes[mem_rank]) + " GB)" +
       (mem_share >= 0.9 ? ": at the memory cap, it binds" : ": not binding") + "\n";
  const double dp_tail = b.dp_exposed_s[r];
  // The loss terms against a perfect pipeline, in seconds of the step.
  struct Loss {
    const char* name;
    double s;
  };
  const Loss losses[] = {
      {"pipeline bubble", e.pipeline_s - b.busy_s[r]},
      {"DP tail (exposed gradient reduction)", dp_tail},
      {"exposed TP communication", M * b.tp_exposed_s[r]},
      {"exposed CP communication", M * b.cp_exposed_s[r]},
      {"blocking p2p", blocking ? M * b.p2p_s[r] : 0.0},
      {"optimizer and step tail", tail - dp_tail},
  };
  const Loss* worst = &losses[0];
  for (const Loss& l : losses)
    if (l.s > worst->s) worst = &l;
  o += "  largest loss in the step: " + std::string(worst->name) + ", " + secs(worst->s) + " (" +
       pct(worst->s, step) + " of the step)\n";
  return o;
}

std::string format_gantt(const ScheduleInput& in, const std::vector<TimedOp>& ops,
                         int max_columns) {
  if (ops.empty() || max_columns < 1) return {};
  double makespan = 0, slot = 0;
  for (const TimedOp& t : ops) {
    makespan = std::max(makespan, t.release_s);
    const double dur = t.end_s - t.start_s;
    if (dur > 0 && (slot == 0 || dur < slot)) slot = dur;
  }
  if (!(makespan > 0) || !(slot > 0)) return {};
  if (makespan / slot > max_columns) slot = makespan / max_columns;
  const int cols = std::max(1, static_cast<int>(std::ceil(makespan / slot - 1e-9)));
  std::vector<std::string> rows(static_cast<std::size_t>(in.devices), std::string(cols, '.'));
  // A slot shows the op that covers its middle.
  auto paint = [&](int d, double a, double z, char ch) {
    const int c0 = std::max(0, static_cast<int>(std::ceil(a / slot - 0.5 - 1e-9)));
    const int c1 = std::min(cols, static_cast<int>(std::ceil(z / slot - 0.5 - 1e-9)));
    for (int k = c0; k < c1; ++k) rows[static_cast<std::size_t>(d)][k] = ch;
  };
  for (const TimedOp& t : ops) {
    char ch = 'B';
    if (t.op.kind == OpKind::kF) ch = mb_label(t.op.mb);
    if (t.op.kind == OpKind::kW) ch = 'W';
    paint(t.device, t.start_s, t.end_s, ch);
    if (t.release_s > t.end_s) paint(t.device, t.end_s, t.release_s, '>');
  }
  std::string o = "Schedule (" + std::string(to_string(in.kind)) + ", one column = " + secs(slot) +
                  "; forward = micro-batch label, B backward, W weight gradient, " +
                  "> send, . idle):\n";
  for (int d = 0; d < in.devices; ++d)
    o += fmt("  rank %2.0f |", d) + rows[static_cast<std::size_t>(d)] + "|\n";
  return o;
}

std::string schedule_trace_json(const Candidate& c, const ExplainedRow& row) {
  const EvalBreakdown& b = row.detail;
  const Evaluation& e = row.eval;
  std::string o = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"tool\":\"ppsearch\",";
  o += "\"tp\":" + std::to_string(c.tp) + ",\"pp\":" + std::to_string(c.pp) +
       ",\"cp\":" + std::to_string(c.cp) + ",\"dp\":" + std::to_string(c.dp) +
       ",\"vpp\":" + std::to_string(c.vpp) + ",\"mbs\":" + std::to_string(c.mbs) +
       ",\"microbatches\":" + std::to_string(c.num_microbatches) + ",\"schedule\":\"" +
       to_string(c.schedule) + "\",\"recompute\":\"" + to_string(c.recompute) +
       "\",\"sp\":" + std::to_string(c.sp) + ",\"zero\":" + std::to_string(c.zero) +
       ",\"ep\":" + std::to_string(c.ep) + ",\"etp\":" + std::to_string(c.etp) +
       ",\"pipeline_s\":" + fmt("%.17g", e.pipeline_s) +
       ",\"iteration_time_s\":" + fmt("%.17g", e.iteration_time_s) + "},\"traceEvents\":[\n";
  bool first = true;
  auto ev = [&](const std::string& body) {
    if (!first) o += ",\n";
    first = false;
    o += "{" + body + "}";
  };
  const int P = b.schedule.devices;
  ev("\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"pipeline\"}");
  for (int d = 0; d < P; ++d) {
    ev("\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":" + std::to_string(d) +
       ",\"args\":{\"name\":\"pipeline rank " + std::to_string(d) + "\"}");
    ev("\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":0,\"tid\":" + std::to_string(d) +
       ",\"args\":{\"sort_index\":" + std::to_string(d) + "}");
  }
  const int V = P * b.schedule.chunks;
  // Producer of each op's input: F(mb, vs−1), B(mb, vs+1) (or F(mb, V−1) for the last stage's
  // backward), W after its own B. Indexed by (kind, mb, vs) to draw flow arrows across ranks.
  const std::size_t cells = static_cast<std::size_t>(V) * b.schedule.microbatches;
  std::vector<int> f_at(cells, -1), b_at(cells, -1);
  for (std::size_t i = 0; i < row.ops.size(); ++i) {
    const PipeOp& p = row.ops[i].op;
    const std::size_t k = static_cast<std::size_t>(p.mb) * V + p.vs;
    if (p.kind == OpKind::kF) f_at[k] = static_cast<int>(i);
    if (is_backward(p.kind)) b_at[k] = static_cast<int>(i);
  }
  std::vector<double> grad_end(static_cast<std::size_t>(P), 0.0);
  int flow_id = 0;
  for (const TimedOp& t : row.ops) {
    const PipeOp& p = t.op;
    const int chunk = p.vs / P;
    const std::string tid = std::to_string(t.device);
    ev("\"name\":\"" + std::string(op_letter(p.kind)) + " mb" + std::to_string(p.mb) +
       (b.schedule.chunks > 1 ? " c" + std::to_string(chunk) : std::string()) + "\",\"cat\":\"" +
       op_letter(p.kind) + "\",\"ph\":\"X\",\"pid\":0,\"tid\":" + tid + ",\"ts\":" + us(t.start_s) +
       ",\"dur\":" + us(t.end_s - t.start_s) + ",\"args\":{\"microbatch\":" + std::to_string(p.mb) +
       ",\"chunk\":" + std::to_string(chunk) + ",\"virtual_stage\":" + std::to_string(p.vs) + "}");
    if (t.release_s > t.end_s)
      ev("\"name\":\"send\",\"cat\":\"p2p\",\"ph\":\"X\",\"pid\":0,\"tid\":" + tid +
         ",\"ts\":" + us(t.end_s) + ",\"dur\":" + us(t.release_s - t.end_s) +
         ",\"args\":{\"microbatch\":" + std::to_string(p.mb) + "}");
    if (p.kind != OpKind::kF) grad_end[t.device] = std::max(grad_end[t.device], t.release_s);
    // Flow arrow from a producer on another rank.
    int src = -1;
    const std::size_t k = static_cast<std::size_t>(p.mb) * V + p.vs;
    const ScheduleKind kind = b.schedule.kind;
    if (p.kind == OpKind::kF && !chain_first(kind, P, p.vs)) src = f_at[k - 1];
    if (is_backward(p.kind)) src = !chain_last(kind, P, V, p.vs) ? b_at[k + 1] : -1;
    if (src >= 0 && row.ops[src].device != t.device) {
      const TimedOp& s = row.ops[src];
      const std::string id = std::to_string(flow_id++);
      ev("\"name\":\"p2p\",\"cat\":\"p2p\",\"ph\":\"s\",\"id\":" + id +
         ",\"pid\":0,\"tid\":" + std::to_string(s.device) + ",\"ts\":" + us(s.end_s));
      ev("\"name\":\"p2p\",\"cat\":\"p2p\",\"ph\":\"f\",\"bp\":\"e\",\"id\":" + id +
         ",\"pid\":0,\"tid\":" + tid + ",\"ts\":" + us(t.start_s));
    }
  }
  // Deferred output-layer wgrad (training.defer_embedding_wgrad): the buffered GEMMs after the
  // rank's last backward op, before its gradient reduction, as evaluate() charges them.
  if (b.deferred_wgrad_rank >= 0 && b.deferred_wgrad_rank < P) {
    const int d = b.deferred_wgrad_rank;
    ev("\"name\":\"deferred output-layer wgrad\",\"cat\":\"tail\",\"ph\":\"X\",\"pid\":0,"
       "\"tid\":" +
       std::to_string(d) + ",\"ts\":" + us(grad_end[d]) + ",\"dur\":" + us(b.deferred_wgrad_s));
    grad_end[d] += b.deferred_wgrad_s;
  }
  // Step tail (the order of evaluate(): DP reduction per rank, then tied embeddings, the
  // gradient norm, the optimizer and the parameter all-gather for every rank).
  double t_end = 0;
  for (int d = 0; d < P; ++d) t_end = std::max(t_end, grad_end[d] + b.dp_exposed_s[d]);
  for (int d = 0; d < P; ++d) {
    const std::string tid = std::to_string(d);
    auto tail = [&](const char* name, double at, double dur) {
      if (dur > 0)
        ev(std::string("\"name\":\"") + name + "\",\"cat\":\"tail\",\"ph\":\"X\",\"pid\":0," +
           "\"tid\":" + tid + ",\"ts\":" + us(at) + ",\"dur\":" + us(dur));
    };
    tail("DP gradient reduction (exposed)", grad_end[d], b.dp_exposed_s[d]);
    double at = t_end;
    tail("tied embedding all-reduce", at, b.tied_embedding_s);
    at += b.tied_embedding_s;
    tail("gradient norm", at, b.grad_norm_s);
    at += b.grad_norm_s;
    tail("optimizer", at, e.optimizer_s);
    at += e.optimizer_s;
    tail("parameter all-gather (exposed)", at, b.param_gather_exposed_s);
    at += b.param_gather_exposed_s;
    tail("straggler wait", at, b.straggler_s);
    at += b.straggler_s;
    tail("per-step overhead", at, b.step_overhead_s);
  }
  o += "\n]}\n";
  return o;
}

}  // namespace ppsearch
