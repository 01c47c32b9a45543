// Round trips through the Communicator at any process count (CTest runs this binary at np 1, 2
// and 4 under mpiexec, with EXPECTED_NP set). Every payload depends on the sender's rank and the
// root, and every expectation is computed independently of the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "ppsearch/comm/communicator.hpp"

namespace {

using ppsearch::Communicator;

std::unique_ptr<Communicator> make_test_communicator() {
  // MPI is already initialised by tests/support/mpi_main.cpp; argc/argv are not used then.
  static char program[] = "ppsearch_mpi_tests";
  static char* args[] = {program, nullptr};
  int argc = 1;
  char** argv = args;
  return ppsearch::make_communicator(argc, argv);
}

// The bytes rank `root` broadcasts: a length and pattern that differ per root.
std::vector<std::byte> payload_of_root(int root) {
  std::vector<std::byte> bytes(static_cast<std::size_t>(1 + 1000 * root + (root % 3) * 7));
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<std::byte>((i * 31 + static_cast<std::size_t>(root) * 7) & 0xff);
  }
  return bytes;
}

// The bytes rank `rank` contributes to a gather (rank 0: none).
std::vector<std::byte> payload_of_rank(int rank) {
  std::vector<std::byte> bytes(static_cast<std::size_t>(rank * 3 + rank % 2));
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<std::byte>((static_cast<std::size_t>(rank) * 13 + i) & 0xff);
  }
  return bytes;
}

class MpiCommunicator : public ::testing::Test {
 protected:
  void SetUp() override { comm = make_test_communicator(); }
  std::unique_ptr<Communicator> comm;
};

TEST_F(MpiCommunicator, RankAndSizeMatchTheLaunch) {
  ASSERT_NE(comm, nullptr);
  EXPECT_TRUE(comm->is_parallel());
  EXPECT_GE(comm->rank(), 0);
  EXPECT_LT(comm->rank(), comm->size());
  if (const char* expected = std::getenv("EXPECTED_NP")) {
    EXPECT_EQ(comm->size(), std::atoi(expected));
  }
  const std::vector<int> ranks = ppsearch::gather_pod(*comm, comm->rank(), 0);
  if (comm->rank() == 0) {
    std::vector<int> expected(static_cast<std::size_t>(comm->size()));
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(ranks, expected);
  } else {
    EXPECT_TRUE(ranks.empty());
  }
}

TEST_F(MpiCommunicator, BroadcastFromEveryRoot) {
  for (int root = 0; root < comm->size(); ++root) {
    SCOPED_TRACE("root=" + std::to_string(root));
    std::vector<std::byte> bytes =
        comm->rank() == root ? payload_of_root(root) : std::vector<std::byte>(5, std::byte{0xaa});
    comm->broadcast(bytes, root);
    EXPECT_EQ(bytes, payload_of_root(root));
  }
}

TEST_F(MpiCommunicator, BroadcastOfNothingEmptiesEveryRank) {
  std::vector<std::byte> bytes =
      comm->rank() == 0 ? std::vector<std::byte>{} : std::vector<std::byte>(17, std::byte{1});
  comm->broadcast(bytes, 0);
  EXPECT_TRUE(bytes.empty());
}

TEST_F(MpiCommunicator, BroadcastOfSeveralMegabytes) {
  const int root = comm->size() - 1;
  const std::size_t n = (std::size_t{3} << 20) + 5;
  std::vector<std::byte> expected(n);
  for (std::size_t i = 0; i < n; ++i) {
    expected[i] = static_cast<std::byte>((i ^ (i >> 8) ^ (i >> 16)) & 0xff);
  }
  std::vector<std::byte> bytes = comm->rank() == root ? expected : std::vector<std::byte>{};
  comm->broadcast(bytes, root);
  EXPECT_TRUE(bytes == expected);  // not EXPECT_EQ: a mismatch would print 3 MiB
}

TEST_F(MpiCommunicator, GatherToEveryRoot) {
  for (int root = 0; root < comm->size(); ++root) {
    SCOPED_TRACE("root=" + std::to_string(root));
    const std::vector<std::vector<std::byte>> all =
        comm->gather(payload_of_rank(comm->rank()), root);
    if (comm->rank() == root) {
      ASSERT_EQ(all.size(), static_cast<std::size_t>(comm->size()));
      for (int r = 0; r < comm->size(); ++r) {
        EXPECT_EQ(all[static_cast<std::size_t>(r)], payload_of_rank(r)) << "from rank " << r;
      }
    } else {
      EXPECT_TRUE(all.empty());
    }
  }
}

TEST_F(MpiCommunicator, AllreduceMaxReturnsTheMaximumEverywhere) {
  const int rank = comm->rank();
  const int size = comm->size();
  EXPECT_EQ(comm->allreduce_max(rank * 7 - 3), (size - 1) * 7 - 3);
  EXPECT_EQ(comm->allreduce_max(-(rank + 1)), -1);
  // Maximum held by a middle rank, not the first or last.
  const int middle = size / 2;
  EXPECT_EQ(comm->allreduce_max(-(rank - middle) * (rank - middle)), 0);
  EXPECT_DOUBLE_EQ(comm->allreduce_max(0.5 - 1.25 * rank), 0.5);
  EXPECT_DOUBLE_EQ(comm->allreduce_max(rank == middle ? 1e300 : -1e300), 1e300);
}

struct Pod {
  int id;
  double value;
  char tag[3];
};

TEST_F(MpiCommunicator, TypedHelpersRoundTrip) {
  const int root = comm->size() - 1;
  Pod pod{-1, 0.0, {'x', 'x', 'x'}};
  if (comm->rank() == root) {
    pod = Pod{42, 2.5, {'a', 'b', 'c'}};
  }
  ppsearch::broadcast_pod(*comm, pod, root);
  EXPECT_EQ(pod.id, 42);
  EXPECT_EQ(pod.value, 2.5);
  EXPECT_EQ(std::string(pod.tag, 3), "abc");

  std::vector<double> values;
  if (comm->rank() == root) {
    values = {1.0, -2.0, 3.5};
  }
  ppsearch::broadcast_pod(*comm, values, root);
  EXPECT_EQ(values, (std::vector<double>{1.0, -2.0, 3.5}));

  static constexpr char kText[] = "[model]\nname = a\0b\n";  // an embedded NUL survives
  const std::string expected_text(kText, sizeof(kText) - 1);
  std::string text = comm->rank() == 0 ? expected_text : "stale";
  ppsearch::broadcast_string(*comm, text, 0);
  EXPECT_EQ(text, expected_text);

  const Pod mine{
      comm->rank(), 0.25 * comm->rank(), {'r', 'k', static_cast<char>('0' + comm->rank())}};
  const std::vector<Pod> pods = ppsearch::gather_pod(*comm, mine, 0);
  // A vector of rank+1 ints valued rank*100+i: lengths differ per rank.
  std::vector<int> row(static_cast<std::size_t>(comm->rank() + 1));
  for (std::size_t i = 0; i < row.size(); ++i) {
    row[i] = comm->rank() * 100 + static_cast<int>(i);
  }
  const std::vector<std::vector<int>> rows = ppsearch::gather_pod(*comm, row, 0);
  if (comm->rank() == 0) {
    ASSERT_EQ(pods.size(), static_cast<std::size_t>(comm->size()));
    ASSERT_EQ(rows.size(), static_cast<std::size_t>(comm->size()));
    for (int r = 0; r < comm->size(); ++r) {
      const auto ur = static_cast<std::size_t>(r);
      EXPECT_EQ(pods[ur].id, r);
      EXPECT_EQ(pods[ur].value, 0.25 * r);
      EXPECT_EQ(pods[ur].tag[2], static_cast<char>('0' + r));
      ASSERT_EQ(rows[ur].size(), ur + 1);
      for (std::size_t i = 0; i <= ur; ++i) {
        EXPECT_EQ(rows[ur][i], r * 100 + static_cast<int>(i));
      }
    }
  } else {
    EXPECT_TRUE(pods.empty());
    EXPECT_TRUE(rows.empty());
  }
}

TEST_F(MpiCommunicator, BadRootThrowsOnEveryRankWithoutHanging) {
  std::vector<std::byte> bytes(3);
  EXPECT_THROW(comm->broadcast(bytes, comm->size()), std::invalid_argument);
  EXPECT_THROW(comm->broadcast(bytes, -1), std::invalid_argument);
  EXPECT_THROW(comm->gather(bytes, comm->size()), std::invalid_argument);
  comm->barrier();  // still in step afterwards
}

TEST_F(MpiCommunicator, TwoCommunicatorsAreIndependent) {
  std::unique_ptr<Communicator> other = make_test_communicator();
  // A collective on one communicator does not match one on the other.
  EXPECT_EQ(other->allreduce_max(comm->rank()), comm->size() - 1);
  EXPECT_EQ(comm->allreduce_max(-comm->rank()), 0);
  std::vector<std::byte> a = comm->rank() == 0 ? payload_of_root(0) : std::vector<std::byte>{};
  other->broadcast(a, 0);
  EXPECT_EQ(a, payload_of_root(0));
}

TEST(SerialCommunicator, IsOneRankAndLocal) {
  std::unique_ptr<Communicator> serial = ppsearch::make_serial_communicator();
  EXPECT_FALSE(serial->is_parallel());
  EXPECT_EQ(serial->rank(), 0);
  EXPECT_EQ(serial->size(), 1);

  std::vector<std::byte> bytes = payload_of_root(2);
  serial->broadcast(bytes, 0);
  EXPECT_EQ(bytes, payload_of_root(2));
  const std::vector<std::vector<std::byte>> all = serial->gather(payload_of_rank(3), 0);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0], payload_of_rank(3));
  EXPECT_THROW(serial->broadcast(bytes, 1), std::invalid_argument);
  EXPECT_THROW(serial->gather(bytes, -1), std::invalid_argument);

  EXPECT_EQ(serial->allreduce_max(-5), -5);
  EXPECT_EQ(serial->allreduce_max(2.5), 2.5);
}

}  // namespace
