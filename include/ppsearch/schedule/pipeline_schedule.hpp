#pragma once
/// \file
/// Pipeline-schedule simulator (docs/algorithms.md §2): generators for GPipe, 1F1B, interleaved
/// 1F1B and ZB-H1, the event-driven reference simulator of §2.4, a fast path whose cost does not
/// grow with the number of micro-batches, and the homogeneous closed forms of §2.1. Part of the
/// pure core: std-only, no MPI, HDF5, Boost or OpenMP, no mutable global state. Every function is
/// thread-safe as long as each thread uses its own SimWorkspace.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ppsearch {

/// \brief Pipeline schedules. Their spelling on the command line and in config files comes from
/// to_string()/parse_schedule(). The numeric values are stable (spec::Schedule mirrors them).
enum class ScheduleKind {
  kGPipe = 0,            ///< all forwards, then all backwards (Huang et al. 2019)
  k1F1B = 1,             ///< PipeDream-Flush / DAPPLE; Megatron non-interleaved order
  kInterleaved1F1B = 2,  ///< Megatron interleaved order, v chunks per device, group size P
  kZBH1 = 3,             ///< Zero Bubble ZB-H1 (Qi et al., ICLR'24 §2.1): split B and W
  kZBV = 4,              ///< ZB-V (Qi et al. 2024, arXiv 2405.15362; sail-sg README): 2 chunks per
             ///< device in a V (device d holds virtual stages d and 2P−1−d), split B/W;
             ///< its time is the period under optimizer post-validation, as ZB-H2's
  kDualPipe = 5,  ///< DualPipe (DeepSeek-V3 report §3.2.1): two pipelines in opposite
                  ///< directions, two parameter copies per device, split B/W
  kZBH2 = 6,  ///< Zero Bubble ZB-H2 (Qi et al., ICLR'24 §2.2): split B/W, 2(P−σ)−1 warm-up
              ///< forwards on stage σ; its time is the period under optimizer post-validation
};

/// \brief "gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-v", "dualpipe" or "zb-h2".
const char* to_string(ScheduleKind kind);
/// \brief Parses a name produced by to_string(ScheduleKind). Returns false (and leaves *kind
/// untouched) for anything else.
bool parse_schedule(std::string_view name, ScheduleKind* kind);
/// \brief The allowed schedule names for help texts and error messages:
/// "gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v, dualpipe, zb-h2".
const char* schedule_names();

/// \brief How point-to-point transfers between pipeline devices are charged (docs/algorithms.md
/// §2.3).
enum class P2PMode {
  kAsync,     ///< the transfer only delays the consumer; no device is occupied by it
  kBlocking,  ///< the sender is busy for the transfer time after each F and B it sends
};

/// \brief "async" or "blocking".
const char* to_string(P2PMode mode);
/// \brief Parses "async" / "blocking". Returns false for anything else.
bool parse_p2p_mode(std::string_view name, P2PMode* mode);

/// \brief One pipeline: devices d = 0..P−1 and virtual stages vs = 0..V−1 with V = v·P and
/// dev(vs) = vs mod P (with v = 1 this is the plain stage → device map), except for the V-shaped
/// schedules (stage_device() in schedule_order.hpp):
/// - ZB-V: v = 2, dev(vs) = vs for vs < P and 2P−1−vs above; one chain 0..2P−1.
/// - DualPipe: v = 2 and the same device map, but two chains: vs = 0..P−1 is the forward
///   direction (stage s on device s) and vs = P + s the reverse direction's stage s (on device
///   P−1−s). Give the reverse direction the same per-stage values as the forward one (stage s's
///   layers: fwd_s[P + s] = fwd_s[s], ...); each direction runs M/2 of the micro-batches. The
///   boundary P−1 → P is no transfer (p2p_s[P−1] is ignored).
///
/// All times are seconds and all memory is bytes. Optional vectors (wgt_s, act_bytes,
/// wkeep_bytes, p2p_s) may be left empty, which means all zeros. Every value must be finite
/// and >= 0.
struct ScheduleInput {
  ScheduleKind kind = ScheduleKind::k1F1B;
  int devices = 1;                  ///< P >= 1
  int chunks = 1;                   ///< v >= 1; must be 1 for GPipe, 1F1B, ZB-H1, ZB-H2, 2 for ZB-V
                                    ///< and DualPipe
  int microbatches = 1;             ///< M >= 1; interleaved needs M % P == 0; DualPipe needs
                                    ///< P even, M even and M >= 2P (deepseek-ai/DualPipe)
  std::vector<double> fwd_s;        ///< size V: forward time of one micro-batch
  std::vector<double> bwd_s;        ///< size V: input-gradient time (B)
  std::vector<double> wgt_s;        ///< size V or empty: weight-gradient time (W). Schedules
                                    ///< without split backward run one fused op of bwd + wgt.
  std::vector<double> act_bytes;    ///< size V or empty: bytes added by F, held until B
  std::vector<double> wkeep_bytes;  ///< size V or empty: bytes still held between B and W (ZB-H1
                                    ///< only; B frees act − wkeep, W frees wkeep). Ignored by
                                    ///< the fused schedules.
  std::vector<double> p2p_s;        ///< size V−1 or empty: transfer time across boundary
                                    ///< vs → vs+1, the same for the gradient coming back. Only
                                    ///< charged when dev(vs) != dev(vs+1).
  P2PMode mode = P2PMode::kAsync;
};

/// \brief What a simulation returns. Vectors are per device. Invalid input gives ok = false
/// with a message in `error`; nothing is thrown.
struct ScheduleResult {
  bool ok = false;
  std::string error;                   ///< set only when ok is false
  double time_s = 0;                   ///< makespan: the last op end over all devices.
                                       ///< ZB-H2, ZB-V: the period max_d (last end − first start)
                                       ///< of device d (ZB §4 post-validation lets the next
                                       ///< iteration start in the fill); last_grad_end_s is
                                       ///< then relative to each device's first start
  std::vector<double> busy_s;          ///< sum of op durations (transfer time excluded)
  std::vector<double> peak_act_bytes;  ///< peak of the running activation-bytes sum, op order
  std::vector<double> peak_wkeep_bytes;  ///< the W-state part of peak_act_bytes at that peak
  std::vector<int> peak_in_flight;       ///< peak number of (micro-batch, chunk) activations
                                         ///< held, i.e. forwards whose B (or fused BW) has not run
  std::vector<double> last_grad_end_s;   ///< end time of the device's last B / W / fused BW op
  double bubble_fraction = 0;            ///< mean over devices of (time_s − busy_s[d]) / time_s
                                         ///< (0 when time_s is 0)
};

/// \brief Reusable state for simulate()/simulate_fast(): scratch buffers plus a cache of compiled
/// schedule programs, one per (kind, P, v, M) recently used (least recently used evicted beyond
/// 32). The first simulate_fast() of a shape costs about one reference simulation to compile;
/// later calls with the same shape and a reused ScheduleResult allocate nothing. Not shareable
/// between threads; cheap to move.
class SimWorkspace {
 public:
  SimWorkspace();
  ~SimWorkspace();
  SimWorkspace(SimWorkspace&&) noexcept;
  SimWorkspace& operator=(SimWorkspace&&) noexcept;
  SimWorkspace(const SimWorkspace&) = delete;
  SimWorkspace& operator=(const SimWorkspace&) = delete;

  struct Impl;
  /// \brief Internal state; not part of the stable interface.
  Impl& impl() { return *m_impl; }

 private:
  std::unique_ptr<Impl> m_impl;
};

/// \brief Limits enforced by validate(): V ≤ kMaxVirtualStages and M·V ≤ kMaxStageMicrobatches.
constexpr int kMaxVirtualStages = 1 << 14;
constexpr long long kMaxStageMicrobatches = 1LL << 22;

/// \brief Checks an input. Returns an empty string when it is valid, otherwise one line of the
/// form "field = value: constraint".
std::string validate(const ScheduleInput& in);

/// \brief Full event-driven simulation (docs/algorithms.md §2.4); the reference. O(M·V) time.
ScheduleResult simulate(const ScheduleInput& in);
/// \brief Same as simulate(), reusing `ws` and `*out` (no allocation once they are warm).
void simulate(const ScheduleInput& in, SimWorkspace& ws, ScheduleResult* out);

/// \brief Returns what simulate() returns (to ~1e-12 relative; peak_in_flight exactly) at a cost
/// that stops growing with M once the schedule's steady state is periodic.
///
/// 1F1B, interleaved 1F1B and ZB-H1: evaluates a compiled, cached form of the op order for a
/// reduced M' ≡ M, checks that the end times of whole steady-state steps repeat up to one constant
/// shift D (max-plus periodicity), and adds D for each period left out; when no repeat is found
/// well below M it evaluates the compiled program for M itself. GPipe uses its exact flow-shop
/// closed form (docs/algorithms.md §2.3). See src/schedule/simulator.cpp for the argument.
ScheduleResult simulate_fast(const ScheduleInput& in);
/// \brief Same as simulate_fast(), reusing `ws` and `*out`.
void simulate_fast(const ScheduleInput& in, SimWorkspace& ws, ScheduleResult* out);

/// \brief simulate_fast()'s memory figures alone, without the timing: ok, error, peak_act_bytes,
/// peak_wkeep_bytes, peak_in_flight and busy_s are what simulate_fast() gives, bit for bit;
/// time_s, last_grad_end_s and bubble_fraction are NaN (GPipe: its closed form, all filled).
/// The memory peak is a function of the op order alone; for 1F1B, interleaved 1F1B and ZB-H1 it
/// is read from the first reduced program simulate_fast() runs, whose states are every state of
/// the full order (docs/performance.md "Memory before time"). For ruling out a layout over the
/// memory capacity at a fraction of a simulation.
void simulate_memory(const ScheduleInput& in, SimWorkspace& ws, ScheduleResult* out);

/// \brief Closed-form pipeline time for homogeneous stages and no p2p cost (docs/algorithms.md
/// §2.1).
///
/// Convention: f, b, w are one device's forward, input-gradient and weight-gradient time for one
/// micro-batch. With interleaving each of a device's v chunks takes f/v, b/v, w/v. Schedules
/// that do not split the backward run b + w as one op.
/// - GPipe, 1F1B: (M+P−1)(f+b+w)  (SC21 §2.2.1)
/// - interleaved 1F1B: M(f+b+w) + (P−1)(f+b+w)/v, needs M % P == 0  (SC21 §2.2.2)
/// - ZB-H1: M(f+b+w) + (P−1)(f+b) − (min(M,P)−1)·min(f,b,w) [derived for this module's ZB-H1
///   order]. This is the Zero Bubble paper's M(f+b+w) + (P−1)(f+b−w) (ICLR'24 §2.1, stated for
///   f = b = w) exactly when M >= P and w <= min(f, b).
/// - ZB-V (v = 2): M(f+b+w), the period of time_s (sail-sg README: bubble 0 at f = b = w), at
///   the design point f = b = w for every M >= 2P−1 [checked against the simulator]; NaN
///   otherwise.
/// - DualPipe: M(f+b+w) + (P/2−1)(F&B + B − 3W) with F&B = f+b+w (no overlap gain) and the full
///   backward B = b+w (DeepSeek-V3 report §3.2.1, Table 2), i.e. M(f+b+w) + (P/2−1)(f+2b−w);
///   needs P even and M even, M >= 2P.
/// - ZB-H2: M(f+b+w) + (P−1)(f+b−2w) (Zero Bubble ICLR'24 §2.2, Table 2), the period of
///   time_s, exactly when M >= 2P−1 and w <= min(f, b) [checked against the simulator]; NaN
///   otherwise.
/// Returns NaN for P, v or M < 1, a v the kind does not take, and M outside the kind's rule.
double closed_form_time(ScheduleKind kind, int P, int v, int M, double f, double b, double w);

}  // namespace ppsearch
