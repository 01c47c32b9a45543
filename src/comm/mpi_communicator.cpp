// The MPI communicator. This is the only file of the ppsearch libraries that includes <mpi.h>
// (docs/architecture.md §3.3); everything else sees the std-only Communicator interface.
//
// It works on a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN, so every failed call
// becomes a CommError naming the call.
#include "mpi_communicator.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ppsearch/comm/communicator.hpp"

namespace ppsearch {
namespace {

// Bytes per MPI call: MPI counts are int, so large buffers travel in chunks.
constexpr std::size_t kMaxChunkBytes = std::size_t{1} << 30;

// Live MPI communicators, and whether we (not the caller) initialised MPI. MPI itself is
// process-global state; this only decides who calls MPI_Finalize (the last one to go).
int g_live_communicators = 0;
bool g_we_initialized_mpi = false;

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    return "MPI error code " + std::to_string(code);
  }
  return std::string(text, static_cast<std::size_t>(length));
}

void check(int rc, const char* call) {
  if (rc != MPI_SUCCESS) {
    throw CommError(std::string(call) + " failed: " + mpi_error_text(rc));
  }
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &m_comm), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(m_comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(m_comm, &m_rank), "MPI_Comm_rank");
    check(MPI_Comm_size(m_comm, &m_size), "MPI_Comm_size");

    ++g_live_communicators;
  }

  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  // Collective: every rank destroys its communicator at the same point of the program.
  ~MpiCommunicator() override {
    MPI_Comm_free(&m_comm);
    --g_live_communicators;
    if (g_live_communicators == 0 && g_we_initialized_mpi) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (finalized == 0) {
        MPI_Finalize();
      }
    }
  }

  int rank() const override { return m_rank; }
  int size() const override { return m_size; }
  bool is_parallel() const override { return true; }

  void broadcast(std::vector<std::byte>& bytes, int root) override {
    check_root(root);
    unsigned long long count = bytes.size();
    check(MPI_Bcast(&count, 1, MPI_UNSIGNED_LONG_LONG, root, m_comm), "MPI_Bcast (size)");
    if (m_rank != root) {
      bytes.resize(static_cast<std::size_t>(count));
    }
    for (std::size_t offset = 0; offset < bytes.size(); offset += kMaxChunkBytes) {
      const int chunk = static_cast<int>(std::min(kMaxChunkBytes, bytes.size() - offset));
      check(MPI_Bcast(bytes.data() + offset, chunk, MPI_BYTE, root, m_comm), "MPI_Bcast");
    }
  }

  std::vector<std::vector<std::byte>> gather(const std::vector<std::byte>& mine,
                                             int root) override {
    check_root(root);
    // Every rank learns every size, so all of them agree on the size check below.
    unsigned long long my_count = mine.size();
    std::vector<unsigned long long> counts(static_cast<std::size_t>(m_size));
    check(MPI_Allgather(&my_count, 1, MPI_UNSIGNED_LONG_LONG, counts.data(), 1,
                        MPI_UNSIGNED_LONG_LONG, m_comm),
          "MPI_Allgather (sizes)");
    unsigned long long total = 0;
    for (unsigned long long c : counts) {
      total += c;
    }
    if (total > static_cast<unsigned long long>(INT_MAX)) {
      throw CommError("gather of " + std::to_string(total) +
                      " bytes exceeds the 2^31-1 byte limit of one MPI_Gatherv");
    }

    std::vector<int> int_counts(counts.size());
    std::vector<int> displacements(counts.size());
    int offset = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      int_counts[r] = static_cast<int>(counts[r]);
      displacements[r] = offset;
      offset += int_counts[r];
    }
    const bool is_root = m_rank == root;
    std::vector<std::byte> flat(is_root ? static_cast<std::size_t>(total) : 0);
    check(MPI_Gatherv(mine.data(), static_cast<int>(my_count), MPI_BYTE, flat.data(),
                      int_counts.data(), displacements.data(), MPI_BYTE, root, m_comm),
          "MPI_Gatherv");

    std::vector<std::vector<std::byte>> out;
    if (is_root) {
      out.reserve(counts.size());
      for (std::size_t r = 0; r < counts.size(); ++r) {
        const auto first = flat.begin() + displacements[r];
        out.emplace_back(first, first + int_counts[r]);
      }
    }
    return out;
  }

  int allreduce_max(int v) override {
    int out = 0;
    check(MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_MAX, m_comm), "MPI_Allreduce (int max)");
    return out;
  }

  double allreduce_max(double v) override {
    double out = 0.0;
    check(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, m_comm), "MPI_Allreduce (double max)");
    return out;
  }

  void barrier() override { check(MPI_Barrier(m_comm), "MPI_Barrier"); }

  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(m_comm, exit_code);
    std::abort();  // MPI_Abort does not return; this only satisfies [[noreturn]]
  }

 private:
  void check_root(int root) const {
    if (root < 0 || root >= m_size) {
      throw std::invalid_argument("communicator root " + std::to_string(root) +
                                  " out of range [0, " + std::to_string(m_size) + ")");
    }
  }

  MPI_Comm m_comm = MPI_COMM_NULL;
  int m_rank = 0;
  int m_size = 1;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(int& argc, char**& argv) {
  int initialized = 0;
  int finalized = 0;
  check(MPI_Initialized(&initialized), "MPI_Initialized");
  check(MPI_Finalized(&finalized), "MPI_Finalized");
  if (finalized != 0) {
    throw CommError(
        "MPI is already finalized: create the communicator once, at the start of main()");
  }
  int provided = MPI_THREAD_SINGLE;
  if (initialized == 0) {
    check(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    g_we_initialized_mpi = true;
  } else {
    check(MPI_Query_thread(&provided), "MPI_Query_thread");
  }
  if (provided < MPI_THREAD_FUNNELED) {
    throw CommError("the MPI library provides thread level " + std::to_string(provided) +
                    ", ppsearch needs MPI_THREAD_FUNNELED (" + std::to_string(MPI_THREAD_FUNNELED) +
                    ")");
  }
  return std::make_unique<MpiCommunicator>();
}

}  // namespace ppsearch
