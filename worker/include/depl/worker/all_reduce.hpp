// Sums a float buffer across the ranks of a data-parallel job: the one collective synchronous SGD
// needs (averaging gradients), and with zeroed non-root buffers also a broadcast from rank 0.
// The TCP implementation is a star over Asio sockets: rank 0 listens on MASTER_PORT, the others
// connect; each call, rank 0 receives every peer's length-prefixed buffer, adds them in rank order
// (so every run sums in the same order) and sends the total back.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "depl/common/expected.hpp"

namespace depl::worker {

class GradientAllReduce {
 public:
  virtual ~GradientAllReduce() = default;
  // Replaces `values` on every rank by the element-wise sum over all ranks. Every rank must call
  // with the same size; a vanished or silent peer is an error naming its rank.
  virtual Expected<void> sum(std::span<float> values) = 0;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
};

// World size 1: the sum over one rank is the buffer itself.
std::unique_ptr<GradientAllReduce> make_single_rank_all_reduce();

struct TcpAllReduceOptions {
  int world_size = 1;
  int rank = 0;
  std::string master_addr = "127.0.0.1";
  std::string listen_address = "0.0.0.0";  // rank 0 binds here
  std::uint16_t master_port = 0;  // 0 on rank 0: any free port, reported through on_listening
  // Longest wait for a peer: to connect at start-up, and for each message afterwards.
  std::chrono::milliseconds timeout{std::chrono::seconds(120)};
  std::function<void(std::uint16_t port)> on_listening;  // rank 0, once listening
};

// Rendezvous: rank 0 binds and waits for world_size - 1 peers; the others connect, retrying with
// backoff until rank 0 is up or the timeout passes.
Expected<std::unique_ptr<GradientAllReduce>> connect_tcp_all_reduce(
    const TcpAllReduceOptions& options);

// Copies rank 0's values to every rank (exact: the other ranks contribute zeros).
Expected<void> broadcast_from_rank0(GradientAllReduce& all_reduce, std::span<float> values);

}  // namespace depl::worker
