// The lifecycle of an MPI communicator that owns MPI (what main() does): make_communicator()
// initialises MPI, destroying the communicator finalizes it (mpiexec reports a failure for a
// process that exits without MPI_Finalize), and a second make_communicator() afterwards throws
// CommError instead of touching a finalized MPI. Exit 0 = all good; prints what failed.
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "ppsearch/comm/communicator.hpp"

int main(int argc, char** argv) {
  int failures = 0;
  auto expect = [&failures](bool ok, const std::string& what) {
    if (!ok) {
      std::fprintf(stderr, "FAILED: %s\n", what.c_str());
      ++failures;
    }
  };
  {
    std::unique_ptr<ppsearch::Communicator> comm = ppsearch::make_communicator(argc, argv);
    expect(comm->is_parallel(), "make_communicator() gives the MPI communicator");
    std::string text = comm->rank() == 0 ? "resolved config" : "";
    ppsearch::broadcast_string(*comm, text, 0);
    expect(text == "resolved config", "broadcast through the owning communicator");
    const int most = comm->allreduce_max(comm->rank());
    expect(most == comm->size() - 1, "allreduce_max of the ranks is size-1");
    if (comm->rank() == 0) {
      std::printf("lifecycle: %d rank(s)\n", comm->size());
    }
  }  // MPI_Finalize here
  try {
    ppsearch::make_communicator(argc, argv);
    expect(false, "make_communicator() after finalize throws");
  } catch (const ppsearch::CommError& e) {
    expect(std::string(e.what()).find("finalized") != std::string::npos,
           std::string("the error names the cause: ") + e.what());
  }
  return failures == 0 ? 0 : 1;
}
