// ppsearch-probe's MPI measurements (docs/probe.md). With mpi_communicator.cpp the only library
// file that includes <mpi.h> (docs/architecture.md §3.3). Host memory, MPI's own transports:
// this measures the host path, not NCCL over NVLink or GPUDirect RDMA (docs/probe.md says what
// that does and does not tell).
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ppsearch/comm/probe.hpp"

namespace ppsearch {
namespace {

// Times `op` (called `iters` times after one warm-up) on `comm`; the slowest rank's mean.
template <typename Op>
double timed(MPI_Comm comm, int iters, Op op) {
  op();
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) op();
  double mine = (MPI_Wtime() - t0) / iters, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
  return slowest;
}

std::vector<double> sizes_of(const ProbeRunOptions& o) {
  std::vector<double> s;
  for (double b = std::max(8.0, o.min_bytes); b <= o.max_bytes; b *= 4) s.push_back(b);
  return s;
}

// Collectives over `comm` (every rank of it calls this); points kept on comm rank 0.
std::vector<ProbeSeries> measure_group(MPI_Comm comm, int nodes, const ProbeRunOptions& o,
                                       const std::string& what) {
  int n = 0, me = 0;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &me);
  std::vector<ProbeSeries> out;
  if (n < 2) return out;
  const std::vector<double> sizes = sizes_of(o);
  const std::size_t max_elems = static_cast<std::size_t>(o.max_bytes / sizeof(float)) + n;
  std::vector<float> a(max_elems, 1.0f), b(max_elems * static_cast<std::size_t>(1), 0.0f);
  std::vector<float> big(max_elems * static_cast<std::size_t>(n) / n + max_elems, 0.0f);
  for (ProbeCollective c : {ProbeCollective::kAllReduce, ProbeCollective::kAllGather,
                            ProbeCollective::kReduceScatter, ProbeCollective::kSendRecv}) {
    ProbeSeries s;
    s.collective = c;
    s.ranks = c == ProbeCollective::kSendRecv ? 2 : n;
    s.nodes = nodes;
    s.source = what + ", MPI " + to_string(c) + " over " + std::to_string(s.ranks) + " ranks";
    for (double bytes : sizes) {
      // nccl-tests conventions (doc/PERFORMANCE.md): size = the whole buffer (all-gather:
      // output, reduce-scatter: input), each rank contributing size / n.
      const int count = std::max(1, static_cast<int>(bytes / sizeof(float)));
      const int per = std::max(1, count / n);
      const double size = c == ProbeCollective::kAllReduce || c == ProbeCollective::kSendRecv
                              ? static_cast<double>(count) * sizeof(float)
                              : static_cast<double>(per) * n * sizeof(float);
      if (static_cast<std::size_t>(per) * n > big.size() ||
          static_cast<std::size_t>(count) > a.size())
        continue;
      double t = 0;
      switch (c) {
        case ProbeCollective::kAllReduce:
          t = timed(comm, o.iters,
                    [&] { MPI_Allreduce(a.data(), b.data(), count, MPI_FLOAT, MPI_SUM, comm); });
          break;
        case ProbeCollective::kAllGather:
          t = timed(comm, o.iters, [&] {
            MPI_Allgather(a.data(), per, MPI_FLOAT, big.data(), per, MPI_FLOAT, comm);
          });
          break;
        case ProbeCollective::kReduceScatter:
          t = timed(comm, o.iters, [&] {
            MPI_Reduce_scatter_block(big.data(), b.data(), per, MPI_FLOAT, MPI_SUM, comm);
          });
          break;
        case ProbeCollective::kSendRecv:
          // Ping-pong between comm ranks 0 and 1; one way = half the round trip.
          t = timed(comm, o.iters,
                    [&] {
                      if (me == 0) {
                        MPI_Send(a.data(), count, MPI_FLOAT, 1, 7, comm);
                        MPI_Recv(b.data(), count, MPI_FLOAT, 1, 7, comm, MPI_STATUS_IGNORE);
                      } else if (me == 1) {
                        MPI_Recv(b.data(), count, MPI_FLOAT, 0, 7, comm, MPI_STATUS_IGNORE);
                        MPI_Send(a.data(), count, MPI_FLOAT, 0, 7, comm);
                      }
                    }) /
              2;
          break;
      }
      ProbePoint p;
      p.bytes = size;
      p.time_s = std::max(t, 1e-9);
      p.busbw = size / p.time_s * bus_factor(c, s.ranks);
      s.points.push_back(p);
    }
    if (me == 0) out.push_back(s);
  }
  return out;
}

}  // namespace

ProbeRun run_mpi_probe(int* argc, char*** argv, const ProbeRunOptions& o) {
  ProbeRun r;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &r.world);
  // Nodes: the shared-memory groups. Leaders (local rank 0) form the cross-node group.
  MPI_Comm node = MPI_COMM_NULL, leaders = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, r.rank, MPI_INFO_NULL, &node);
  int local = 0, local_n = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_size(node, &local_n);
  MPI_Comm_split(MPI_COMM_WORLD, local == 0 ? 0 : MPI_UNDEFINED, r.rank, &leaders);
  int is_leader = local == 0 ? 1 : 0;
  MPI_Allreduce(&is_leader, &r.nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  // Rank 0's node size, and the host names of the leaders.
  r.ranks_per_node = local_n;
  MPI_Bcast(&r.ranks_per_node, 1, MPI_INT, 0, MPI_COMM_WORLD);
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(host, &len);
  if (leaders != MPI_COMM_NULL) {
    int nl = 0;
    MPI_Comm_size(leaders, &nl);
    std::vector<char> all(static_cast<std::size_t>(nl) * MPI_MAX_PROCESSOR_NAME, 0);
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
               0, leaders);
    if (r.rank == 0) {
      for (int i = 0; i < nl; ++i)
        r.hosts.emplace_back(&all[static_cast<std::size_t>(i) * MPI_MAX_PROCESSOR_NAME]);
    }
  }
  // Inside rank 0's node (every node measures its own at the same time; rank 0 keeps its own).
  std::vector<ProbeSeries> s = measure_group(node, 1, o, "inside node " + std::string(host));
  if (r.rank == 0) r.series.insert(r.series.end(), s.begin(), s.end());
  MPI_Barrier(MPI_COMM_WORLD);
  // Across nodes: one rank per node.
  if (leaders != MPI_COMM_NULL) {
    s = measure_group(leaders, r.nodes, o, "across " + std::to_string(r.nodes) + " nodes");
    if (r.rank == 0) r.series.insert(r.series.end(), s.begin(), s.end());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (leaders != MPI_COMM_NULL) MPI_Comm_free(&leaders);
  MPI_Comm_free(&node);
  if (!initialized) MPI_Finalize();
  return r;
}

}  // namespace ppsearch
