#pragma once
/// \file
/// ppsearch-probe's measurements over MPI (docs/probe.md). Implemented in src/comm/probe_mpi.cpp,
/// the second of the two files that include <mpi.h>; a build without MPI gets a stub that
/// reports so.

#include <string>
#include <vector>

#include "ppsearch/probe/probe.hpp"

namespace ppsearch {

/// \brief What to measure.
struct ProbeRunOptions {
  double min_bytes = 8;                 ///< smallest message
  double max_bytes = 16.0 * (1 << 20);  ///< largest message (doubled by 4 from min_bytes)
  int iters = 10;                       ///< timed repetitions per size (after one warm-up)
};

/// \brief What one run found. Only rank 0 holds the series; every rank gets rank, world, nodes.
struct ProbeRun {
  int rank = 0;
  int world = 1;
  int nodes = 1;                    ///< distinct hosts (MPI_COMM_TYPE_SHARED groups)
  int ranks_per_node = 1;           ///< of the node holding rank 0
  std::vector<std::string> hosts;   ///< one name per node (rank 0 only)
  std::vector<ProbeSeries> series;  ///< rank 0 only; `nodes` = the span of each group
  std::string error;                ///< non-empty when MPI is missing or a call failed
};

/// \brief Initialises MPI (if needed), measures point-to-point (ping-pong, half the round trip)
/// and all-reduce, all-gather and reduce-scatter (MPI_Allreduce, MPI_Allgather,
/// MPI_Reduce_scatter_block on host memory) inside a node (the ranks sharing rank 0's node) and
/// across nodes (one rank per node), and finalises MPI.
ProbeRun run_mpi_probe(int* argc, char*** argv, const ProbeRunOptions& options);

}  // namespace ppsearch
