// make_communicator(): MPI when the build has it (PPSEARCH_COMM_WITH_MPI), else serial.
#include <memory>

#include "ppsearch/comm/communicator.hpp"

#if PPSEARCH_COMM_WITH_MPI
#include "mpi_communicator.hpp"
#endif

namespace ppsearch {

std::unique_ptr<Communicator> make_communicator(int& argc, char**& argv) {
#if PPSEARCH_COMM_WITH_MPI
  return make_mpi_communicator(argc, argv);
#else
  (void)argc;
  (void)argv;
  return make_serial_communicator();
#endif
}

}  // namespace ppsearch
