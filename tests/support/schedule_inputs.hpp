// Random valid schedule inputs, shared by the simulator and simulation-memo tests.
#pragma once

#include <random>

#include "ppsearch/schedule/pipeline_schedule.hpp"

namespace ppsearch::test {

// A valid heterogeneous input of `kind` that every kind accepts: P = 2, 4, ..., 2·max_pairs
// devices, 2 chunks for the interleaved, V-shaped and DualPipe schedules (1 otherwise),
// M = P·(2..5) micro-batches, either p2p mode, random stage times, bytes and transfers.
inline ScheduleInput random_schedule_input(ScheduleKind kind, std::mt19937& rng,
                                           int max_pairs = 3) {
  std::uniform_real_distribution<double> u(0.5, 1.5);
  ScheduleInput in;
  in.kind = kind;
  in.devices = 2 * (1 + static_cast<int>(rng() % static_cast<unsigned>(max_pairs)));
  in.chunks = (kind == ScheduleKind::kInterleaved1F1B || kind == ScheduleKind::kZBV ||
               kind == ScheduleKind::kDualPipe)
                  ? 2
                  : 1;
  in.microbatches = in.devices * (2 + static_cast<int>(rng() % 4));
  in.mode = rng() % 2 ? P2PMode::kAsync : P2PMode::kBlocking;
  const int V = in.devices * in.chunks;
  for (int vs = 0; vs < V; ++vs) {
    in.fwd_s.push_back(u(rng));
    in.bwd_s.push_back(2 * u(rng));
    in.wgt_s.push_back(0.7 * u(rng));
    in.act_bytes.push_back(1e9 * u(rng));
    in.wkeep_bytes.push_back(0.3e9 * u(rng));
  }
  for (int vs = 0; vs + 1 < V; ++vs) in.p2p_s.push_back(0.05 * u(rng));
  return in;
}

}  // namespace ppsearch::test
