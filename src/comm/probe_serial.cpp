// ppsearch-probe without MPI: the measurement reports that this build cannot measure.
#include "ppsearch/comm/probe.hpp"

namespace ppsearch {

ProbeRun run_mpi_probe(int*, char***, const ProbeRunOptions&) {
  ProbeRun r;
  r.error = "this ppsearch-probe was built without MPI: it can only import nccl-tests logs";
  return r;
}

}  // namespace ppsearch
