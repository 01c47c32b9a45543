// GoogleTest main for the MPI tests (docs/environment.md §6): only rank 0 prints the normal
// gtest output, other ranks print only their failed assertions prefixed "[rank N]", and every
// rank exits with the MPI_MAX of the results (a failure anywhere fails the CTest test).
// Besides src/comm/mpi_communicator.cpp, the only file that includes <mpi.h>.
#include <gtest/gtest.h>
#include <mpi.h>

#include <iostream>

namespace {

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : m_rank(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (result.failed()) {
      std::cerr << "[rank " << m_rank << "] "
                << (result.file_name() != nullptr ? result.file_name() : "?") << ":"
                << result.line_number() << ": Failure\n"
                << result.summary() << std::endl;
    }
  }

 private:
  int m_rank;
};

}  // namespace

int main(int argc, char** argv) {
  // MPI is initialised here, before any test, so communicators made by the tests do not own
  // (and do not finalize) it.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  const int local = RUN_ALL_TESTS();
  int global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && local == 0 && global != 0) {
    std::cout << "[  FAILED  ] on another rank (see the [rank N] lines)" << std::endl;
  }
  MPI_Finalize();
  return global;
}
