#include "depl/worker/all_reduce.hpp"

#include <future>
#include <thread>

#include <gtest/gtest.h>

namespace depl::worker {
namespace {

using namespace std::chrono_literals;

TcpAllReduceOptions options_for(int world, int rank, std::uint16_t port) {
  TcpAllReduceOptions o;
  o.world_size = world;
  o.rank = rank;
  o.master_addr = "127.0.0.1";
  o.listen_address = "127.0.0.1";
  o.master_port = port;
  o.timeout = 20s;
  return o;
}

TEST(AllReduce, ThreeRanksSumOverTcp) {
  std::promise<std::uint16_t> port_promise;
  auto port_future = port_promise.get_future();
  std::vector<std::vector<float>> results(3);
  std::vector<std::string> errors(3);
  auto body = [&](int rank, std::uint16_t port) {
    auto o = options_for(3, rank, port);
    if (rank == 0) o.on_listening = [&](std::uint16_t p) { port_promise.set_value(p); };
    auto reduce = connect_tcp_all_reduce(o);
    if (!reduce) {
      errors[static_cast<std::size_t>(rank)] = reduce.error().message;
      if (rank == 0) port_promise.set_value(0);
      return;
    }
    std::vector<float> values{static_cast<float>(rank), 10.0f * static_cast<float>(rank + 1)};
    for (int round = 0; round < 3; ++round) {  // repeated calls reuse the connections
      auto ok = (*reduce)->sum(values);
      if (!ok) {
        errors[static_cast<std::size_t>(rank)] = ok.error().message;
        return;
      }
    }
    results[static_cast<std::size_t>(rank)] = values;
  };
  std::thread r0(body, 0, 0);
  const std::uint16_t port = port_future.get();
  ASSERT_NE(port, 0);
  std::thread r1(body, 1, port);
  std::thread r2(body, 2, port);
  r0.join();
  r1.join();
  r2.join();
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(errors[static_cast<std::size_t>(r)], "");
    // Round 1: (3, 60); round 2: 3 * (3, 60); round 3: 9 * (3, 60).
    EXPECT_EQ(results[static_cast<std::size_t>(r)], (std::vector<float>{27.0f, 540.0f}));
  }
}

TEST(AllReduce, BroadcastCopiesRankZero) {
  std::promise<std::uint16_t> port_promise;
  auto port_future = port_promise.get_future();
  std::vector<float> at_rank1{7.0f, 7.0f};
  std::string error1;
  std::thread r0([&] {
    auto o = options_for(2, 0, 0);
    o.on_listening = [&](std::uint16_t p) { port_promise.set_value(p); };
    auto reduce = connect_tcp_all_reduce(o);
    if (!reduce) return;
    std::vector<float> mine{1.5f, -2.0f};
    (void)broadcast_from_rank0(**reduce, mine);
  });
  std::thread r1([&] {
    auto reduce = connect_tcp_all_reduce(options_for(2, 1, port_future.get()));
    if (!reduce) {
      error1 = reduce.error().message;
      return;
    }
    auto ok = broadcast_from_rank0(**reduce, at_rank1);
    if (!ok) error1 = ok.error().message;
  });
  r0.join();
  r1.join();
  EXPECT_EQ(error1, "");
  EXPECT_EQ(at_rank1, (std::vector<float>{1.5f, -2.0f}));
}

TEST(AllReduce, AVanishedPeerIsAnErrorNamingItsRank) {
  std::promise<std::uint16_t> port_promise;
  auto port_future = port_promise.get_future();
  std::string error0;
  std::thread r0([&] {
    auto o = options_for(2, 0, 0);
    o.on_listening = [&](std::uint16_t p) { port_promise.set_value(p); };
    auto reduce = connect_tcp_all_reduce(o);
    if (!reduce) {
      error0 = "connect: " + reduce.error().message;
      return;
    }
    std::vector<float> values{1.0f};
    auto ok = (*reduce)->sum(values);
    error0 = ok ? "no error" : ok.error().message;
  });
  {
    // Rank 1 joins and then goes away without ever sending.
    auto reduce = connect_tcp_all_reduce(options_for(2, 1, port_future.get()));
    ASSERT_TRUE(reduce) << reduce.error().message;
  }
  r0.join();
  EXPECT_NE(error0.find("rank 1 closed the connection"), std::string::npos) << error0;
}

TEST(AllReduce, MismatchedBufferSizesAreReported) {
  std::promise<std::uint16_t> port_promise;
  auto port_future = port_promise.get_future();
  std::string error0;
  std::thread r0([&] {
    auto o = options_for(2, 0, 0);
    o.on_listening = [&](std::uint16_t p) { port_promise.set_value(p); };
    auto reduce = connect_tcp_all_reduce(o);
    if (!reduce) return;
    std::vector<float> values(4, 1.0f);
    auto ok = (*reduce)->sum(values);
    error0 = ok ? "no error" : ok.error().message;
  });
  auto reduce = connect_tcp_all_reduce(options_for(2, 1, port_future.get()));
  ASSERT_TRUE(reduce) << reduce.error().message;
  std::vector<float> values(3, 1.0f);
  (void)(*reduce)->sum(values);  // fails once rank 0 gives up on the connection
  reduce->reset();
  r0.join();
  EXPECT_NE(error0.find("rank 1 sent 3 floats, this rank expected 4"), std::string::npos) << error0;
}

TEST(AllReduce, ASilentPeerTimesOut) {
  std::promise<std::uint16_t> port_promise;
  auto port_future = port_promise.get_future();
  std::string error0;
  std::thread r0([&] {
    auto o = options_for(2, 0, 0);
    o.timeout = 1s;  // the peer below never sends: the deadline, not a sleep, ends the wait
    o.on_listening = [&](std::uint16_t p) { port_promise.set_value(p); };
    auto reduce = connect_tcp_all_reduce(o);
    if (!reduce) {
      error0 = "connect: " + reduce.error().message;
      return;
    }
    std::vector<float> values{1.0f};
    auto ok = (*reduce)->sum(values);
    error0 = ok ? "no error" : ok.error().message;
  });
  auto reduce = connect_tcp_all_reduce(options_for(2, 1, port_future.get()));
  ASSERT_TRUE(reduce) << reduce.error().message;
  r0.join();  // rank 1 stays connected and silent until rank 0 has given up
  EXPECT_NE(error0.find("rank 1 did not answer in time"), std::string::npos) << error0;
}

TEST(AllReduce, RankZeroReportsPeersThatNeverCome) {
  auto o = options_for(3, 0, 0);
  o.timeout = 200ms;
  auto reduce = connect_tcp_all_reduce(o);
  ASSERT_FALSE(reduce);
  EXPECT_NE(reduce.error().message.find("only 0 of 2 peers connected"), std::string::npos)
      << reduce.error().message;
}

TEST(AllReduce, InvalidRankOrWorldSizeIsRejected) {
  EXPECT_FALSE(connect_tcp_all_reduce(options_for(2, 2, 1)));
  EXPECT_FALSE(connect_tcp_all_reduce(options_for(0, 0, 1)));
  auto single = connect_tcp_all_reduce(options_for(1, 0, 0));
  ASSERT_TRUE(single);
  std::vector<float> v{3.0f};
  EXPECT_TRUE((*single)->sum(v));
  EXPECT_EQ(v[0], 3.0f);
}

}  // namespace
}  // namespace depl::worker
