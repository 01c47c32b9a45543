// The one-rank communicator: every collective is local. Always built (no MPI needed).
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ppsearch/comm/communicator.hpp"

namespace ppsearch {
namespace {

class SerialCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }

  void broadcast(std::vector<std::byte>& /*bytes*/, int root) override { check_root(root); }

  std::vector<std::vector<std::byte>> gather(const std::vector<std::byte>& mine,
                                             int root) override {
    check_root(root);
    return {mine};
  }

  int allreduce_max(int v) override { return v; }
  double allreduce_max(double v) override { return v; }
  void barrier() override {}
  bool is_parallel() const override { return false; }

  [[noreturn]] void abort(int exit_code) override { std::exit(exit_code); }

 private:
  static void check_root(int root) {
    if (root != 0) {
      throw std::invalid_argument("communicator root " + std::to_string(root) +
                                  " out of range [0, 1)");
    }
  }
};

}  // namespace

std::unique_ptr<Communicator> make_serial_communicator() {
  return std::make_unique<SerialCommunicator>();
}

}  // namespace ppsearch
