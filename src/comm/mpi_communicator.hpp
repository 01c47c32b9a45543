// Private to ppsearch_comm: the MPI communicator's factory. Deliberately free of <mpi.h>.
#pragma once

#include <memory>

#include "ppsearch/comm/communicator.hpp"

namespace ppsearch {

/// \brief An MPI communicator over a duplicate of MPI_COMM_WORLD (see make_communicator()).
/// \throws CommError when MPI cannot be initialised or lacks MPI_THREAD_FUNNELED
std::unique_ptr<Communicator> make_mpi_communicator(int& argc, char**& argv);

}  // namespace ppsearch
