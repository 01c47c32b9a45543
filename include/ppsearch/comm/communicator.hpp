/// \file
/// The runtime's only boundary to MPI: a small abstract communicator with a serial (one rank)
/// implementation that is always built and an MPI one (src/comm/mpi_communicator.cpp, the only
/// file that includes <mpi.h>) built when PPSEARCH_WITH_MPI is ON. Std-only header.
///
/// Lifecycle: create one communicator with make_communicator() at the top of main(), before
/// anything else, and destroy it last. When it initialised MPI, destroying it finalizes MPI, so
/// every HDF5 object (files opened with the MPI-IO driver in particular) must be closed before
/// it is destroyed. All members except rank(), size() and is_parallel() are collective: every
/// rank must call them in the same order with the same root. Only the thread that created the
/// communicator may call it (MPI_THREAD_FUNNELED).
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace ppsearch {

/// A failed communication call (the MPI error text is in what()).
class CommError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Collective operations over the ranks of one run. See the file comment for the lifecycle.
class Communicator {
 public:
  virtual ~Communicator() = default;

  /// \brief This process's rank, 0 <= rank() < size().
  virtual int rank() const = 0;
  /// \brief Number of ranks (1 for the serial communicator).
  virtual int size() const = 0;

  /// \brief Broadcast a byte buffer from root; on other ranks `bytes` is resized and replaced.
  /// \param bytes in on root, out elsewhere; any size (also 0)
  /// \param root the sending rank, 0 <= root < size()
  /// \throws std::invalid_argument for a bad root (on every rank alike), CommError on failure
  virtual void broadcast(std::vector<std::byte>& bytes, int root) = 0;

  /// \brief Gather one byte buffer per rank (sizes may differ) to root.
  /// \param mine this rank's contribution
  /// \param root the receiving rank, 0 <= root < size()
  /// \return on root: size() buffers in rank order; on other ranks: empty
  /// \throws std::invalid_argument for a bad root, CommError on failure or when the total
  ///         exceeds 2^31-1 bytes (thrown on every rank alike)
  virtual std::vector<std::vector<std::byte>> gather(const std::vector<std::byte>& mine,
                                                     int root) = 0;

  /// \brief Maximum of `v` over all ranks, returned on every rank.
  /// \throws CommError on failure
  virtual int allreduce_max(int v) = 0;
  /// \brief Maximum of `v` over all ranks, returned on every rank (NaN handling: as MPI_MAX).
  /// \throws CommError on failure
  virtual double allreduce_max(double v) = 0;

  /// \brief Wait until every rank has reached the barrier.
  /// \throws CommError on failure
  virtual void barrier() = 0;

  /// \brief True when backed by MPI (even with one rank), false for the serial communicator.
  virtual bool is_parallel() const = 0;

  /// \brief Terminate every rank of the run with `exit_code` (MPI_Abort). For fatal errors seen
  ///        on one rank only, where a collective shutdown is impossible. Serial: std::exit.
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

/// \brief The one-rank communicator: broadcast is a no-op, gather returns {mine}.
/// \throws std::bad_alloc only
std::unique_ptr<Communicator> make_serial_communicator();

/// \brief The communicator for this process: MPI when built with PPSEARCH_WITH_MPI (calls
///        MPI_Init_thread with MPI_THREAD_FUNNELED unless MPI is already initialised, and then
///        finalizes MPI when destroyed), else the serial one. MPI may remove its own arguments
///        from argc/argv. If MPI was already initialised by the caller, the communicator uses it
///        and leaves finalization to the caller.
/// \throws CommError when MPI cannot be initialised, was already finalized, or does not
///         provide MPI_THREAD_FUNNELED
std::unique_ptr<Communicator> make_communicator(int& argc, char**& argv);

// ---- typed helpers (trivially copyable types travel as their bytes) ----------------------

/// \brief Broadcast one trivially copyable value from root.
template <class T>
void broadcast_pod(Communicator& comm, T& value, int root) {
  static_assert(std::is_trivially_copyable_v<T>, "broadcast_pod needs a trivially copyable T");
  std::vector<std::byte> bytes(sizeof(T));
  std::memcpy(bytes.data(), &value, sizeof(T));
  comm.broadcast(bytes, root);
  if (bytes.size() != sizeof(T)) {
    throw CommError("broadcast_pod: received " + std::to_string(bytes.size()) +
                    " bytes, expected " + std::to_string(sizeof(T)));
  }
  std::memcpy(&value, bytes.data(), sizeof(T));
}

/// \brief Broadcast a vector of trivially copyable values from root (resized elsewhere).
template <class T>
void broadcast_pod(Communicator& comm, std::vector<T>& values, int root) {
  static_assert(std::is_trivially_copyable_v<T>, "broadcast_pod needs a trivially copyable T");
  std::vector<std::byte> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) {
    std::memcpy(bytes.data(), values.data(), bytes.size());
  }
  comm.broadcast(bytes, root);
  if (bytes.size() % sizeof(T) != 0) {
    throw CommError("broadcast_pod: " + std::to_string(bytes.size()) +
                    " bytes is not a multiple of the element size " + std::to_string(sizeof(T)));
  }
  values.resize(bytes.size() / sizeof(T));
  if (!bytes.empty()) {
    std::memcpy(values.data(), bytes.data(), bytes.size());
  }
}

/// \brief Broadcast a string (e.g. resolved configuration text) from root.
inline void broadcast_string(Communicator& comm, std::string& text, int root) {
  std::vector<std::byte> bytes(text.size());
  if (!bytes.empty()) {
    std::memcpy(bytes.data(), text.data(), bytes.size());
  }
  comm.broadcast(bytes, root);
  text.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

/// \brief Gather one trivially copyable value per rank to root.
/// \return on root: size() values in rank order; elsewhere: empty
template <class T>
std::vector<T> gather_pod(Communicator& comm, const T& mine, int root) {
  static_assert(std::is_trivially_copyable_v<T>, "gather_pod needs a trivially copyable T");
  std::vector<std::byte> bytes(sizeof(T));
  std::memcpy(bytes.data(), &mine, sizeof(T));
  const std::vector<std::vector<std::byte>> all = comm.gather(bytes, root);
  std::vector<T> out(all.size());
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].size() != sizeof(T)) {
      throw CommError("gather_pod: rank " + std::to_string(r) + " sent " +
                      std::to_string(all[r].size()) + " bytes, expected " +
                      std::to_string(sizeof(T)));
    }
    std::memcpy(&out[r], all[r].data(), sizeof(T));
  }
  return out;
}

/// \brief Gather a vector of trivially copyable values per rank (lengths may differ) to root.
/// \return on root: size() vectors in rank order; elsewhere: empty
template <class T>
std::vector<std::vector<T>> gather_pod(Communicator& comm, const std::vector<T>& mine, int root) {
  static_assert(std::is_trivially_copyable_v<T>, "gather_pod needs a trivially copyable T");
  std::vector<std::byte> bytes(mine.size() * sizeof(T));
  if (!bytes.empty()) {
    std::memcpy(bytes.data(), mine.data(), bytes.size());
  }
  const std::vector<std::vector<std::byte>> all = comm.gather(bytes, root);
  std::vector<std::vector<T>> out(all.size());
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].size() % sizeof(T) != 0) {
      throw CommError("gather_pod: rank " + std::to_string(r) + " sent " +
                      std::to_string(all[r].size()) + " bytes, not a multiple of " +
                      std::to_string(sizeof(T)));
    }
    out[r].resize(all[r].size() / sizeof(T));
    if (!all[r].empty()) {
      std::memcpy(out[r].data(), all[r].data(), all[r].size());
    }
  }
  return out;
}

}  // namespace ppsearch
