#include "depl/worker/all_reduce.hpp"

#include <algorithm>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

namespace depl::worker {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

constexpr std::uint32_t kHelloMagic = 0x44504152;  // "DPAR"

class SingleRankAllReduce final : public GradientAllReduce {
 public:
  Expected<void> sum(std::span<float>) override { return {}; }
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
};

// Runs one asynchronous operation on `io` for at most `timeout`: Asio's synchronous calls cannot
// time out, and a peer that hangs must not hang this rank forever.
template <typename Start>
error_code run_with_deadline(asio::io_context& io, tcp::socket& socket,
                             std::chrono::milliseconds timeout, Start start) {
  std::optional<error_code> result;
  start([&](error_code ec, auto&&...) { result = ec; });
  io.restart();
  io.run_for(timeout);
  if (!result) {
    error_code ignored;
    socket.cancel(ignored);
    io.restart();
    io.run();  // let the cancelled handler finish before its captures go away
    return asio::error::timed_out;
  }
  return *result;
}

std::string describe(const error_code& ec) {
  if (ec == asio::error::eof || ec == asio::error::connection_reset) {
    return "closed the connection (it exited or crashed)";
  }
  if (ec == asio::error::timed_out) return "did not answer in time";
  return ec.message();
}

class TcpStarAllReduce final : public GradientAllReduce {
 public:
  TcpStarAllReduce(int rank, int world, std::chrono::milliseconds timeout)
      : rank_(rank), world_(world), timeout_(timeout) {}

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }

  Expected<void> sum(std::span<float> values) override {
    return rank_ == 0 ? gather_and_scatter(values) : contribute(values);
  }

  Expected<void> listen(const TcpAllReduceOptions& options) {
    error_code ec;
    const auto address = asio::ip::make_address(options.listen_address, ec);
    if (ec) {
      return error(fmt::format("all-reduce: listen address '{}' is not an IP address",
                               options.listen_address));
    }
    tcp::acceptor acceptor(io_);
    acceptor.open(address.is_v6() ? tcp::v6() : tcp::v4(), ec);
    if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor.bind(tcp::endpoint(address, options.master_port), ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return error(fmt::format("all-reduce: rank 0 cannot listen on port {}: {}",
                               options.master_port, ec.message()));
    }
    const std::uint16_t port = acceptor.local_endpoint().port();
    spdlog::info("event=all_reduce_listening rank=0 port={} world_size={}", port, world_);
    if (options.on_listening) options.on_listening(port);

    peers_.resize(static_cast<std::size_t>(world_ - 1));
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    int joined = 0;
    while (joined < world_ - 1) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return error(fmt::format("all-reduce: only {} of {} peers connected to port {} within {} s",
                                 joined, world_ - 1, port, timeout_.count() / 1000.0));
      }
      tcp::socket socket(io_);
      std::optional<error_code> accepted;
      acceptor.async_accept(socket, [&](error_code e) { accepted = e; });
      io_.restart();
      io_.run_for(left);
      if (!accepted) {
        acceptor.cancel(ec);
        io_.restart();
        io_.run();
        continue;  // the deadline check above reports it
      }
      if (*accepted) return error("all-reduce: accept failed: " + accepted->message());
      std::uint32_t hello[3] = {0, 0, 0};
      ec = run_with_deadline(io_, socket, timeout_, [&](auto handler) {
        asio::async_read(socket, asio::buffer(hello), handler);
      });
      if (ec || hello[0] != kHelloMagic) {
        spdlog::warn("event=all_reduce_bad_hello detail=\"{}\"", ec ? ec.message() : "bad magic");
        continue;  // not one of ours (a port scan, a stale peer): ignore it
      }
      const int peer_rank = static_cast<int>(hello[1]);
      if (static_cast<int>(hello[2]) != world_) {
        return error(fmt::format("all-reduce: rank {} runs with WORLD_SIZE={}, rank 0 with {}",
                                 peer_rank, hello[2], world_));
      }
      if (peer_rank < 1 || peer_rank >= world_) {
        return error(
            fmt::format("all-reduce: a peer claims rank {} (want 1..{})", peer_rank, world_ - 1));
      }
      auto& slot = peers_[static_cast<std::size_t>(peer_rank - 1)];
      if (slot) return error(fmt::format("all-reduce: two peers claim rank {}", peer_rank));
      socket.set_option(tcp::no_delay(true), ec);
      slot.emplace(std::move(socket));
      ++joined;
    }
    return {};
  }

  Expected<void> connect(const TcpAllReduceOptions& options) {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    auto backoff = std::chrono::milliseconds(50);
    std::string last_error;
    while (std::chrono::steady_clock::now() < deadline) {
      error_code ec;
      tcp::resolver resolver(io_);
      auto endpoints =
          resolver.resolve(options.master_addr, std::to_string(options.master_port), ec);
      if (!ec) {
        tcp::socket socket(io_);
        ec = run_with_deadline(io_, socket, timeout_, [&](auto handler) {
          asio::async_connect(socket, endpoints, handler);
        });
        if (!ec) {
          const std::uint32_t hello[3] = {kHelloMagic, static_cast<std::uint32_t>(rank_),
                                          static_cast<std::uint32_t>(world_)};
          ec = run_with_deadline(io_, socket, timeout_, [&](auto handler) {
            asio::async_write(socket, asio::buffer(hello), handler);
          });
          if (!ec) {
            socket.set_option(tcp::no_delay(true), ec);
            master_.emplace(std::move(socket));
            spdlog::info("event=all_reduce_connected rank={} master={}:{}", rank_,
                         options.master_addr, options.master_port);
            return {};
          }
        }
      }
      last_error = ec.message();
      // Rank 0 may not be listening yet (pods start in any order): retry until the deadline.
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
    }
    return error(fmt::format("all-reduce: rank {} could not reach rank 0 at {}:{} within {} s: {}",
                             rank_, options.master_addr, options.master_port,
                             timeout_.count() / 1000.0, last_error));
  }

 private:
  Expected<void> send(tcp::socket& socket, std::span<const float> values, int peer) {
    const auto count = static_cast<std::uint32_t>(values.size());
    const std::array<asio::const_buffer, 2> buffers{
        asio::buffer(&count, sizeof count), asio::buffer(values.data(), values.size_bytes())};
    const error_code ec = run_with_deadline(
        io_, socket, timeout_, [&](auto handler) { asio::async_write(socket, buffers, handler); });
    if (ec)
      return error(
          fmt::format("all-reduce: sending to rank {}: rank {} {}", peer, peer, describe(ec)));
    return {};
  }

  Expected<void> receive(tcp::socket& socket, std::span<float> into, int peer) {
    std::uint32_t count = 0;
    error_code ec = run_with_deadline(io_, socket, timeout_, [&](auto handler) {
      asio::async_read(socket, asio::buffer(&count, sizeof count), handler);
    });
    if (!ec && count != into.size()) {
      return error(fmt::format(
          "all-reduce: rank {} sent {} floats, this rank expected {} (do all ranks run the same "
          "variant?)",
          peer, count, into.size()));
    }
    if (!ec) {
      ec = run_with_deadline(io_, socket, timeout_, [&](auto handler) {
        asio::async_read(socket, asio::buffer(into.data(), into.size_bytes()), handler);
      });
    }
    if (ec) {
      return error(
          fmt::format("all-reduce: waiting for rank {}: rank {} {}", peer, peer, describe(ec)));
    }
    return {};
  }

  Expected<void> gather_and_scatter(std::span<float> values) {
    scratch_.resize(values.size());
    for (int r = 1; r < world_; ++r) {
      auto ok = receive(*peers_[static_cast<std::size_t>(r - 1)], scratch_, r);
      if (!ok) return ok;
      for (std::size_t i = 0; i < values.size(); ++i) values[i] += scratch_[i];
    }
    for (int r = 1; r < world_; ++r) {
      auto ok = send(*peers_[static_cast<std::size_t>(r - 1)], values, r);
      if (!ok) return ok;
    }
    return {};
  }

  Expected<void> contribute(std::span<float> values) {
    auto ok = send(*master_, values, 0);
    if (!ok) return ok;
    return receive(*master_, values, 0);
  }

  int rank_;
  int world_;
  std::chrono::milliseconds timeout_;
  asio::io_context io_;
  std::vector<std::optional<tcp::socket>> peers_;  // rank 0: peers_[r - 1] is rank r
  std::optional<tcp::socket> master_;              // other ranks: the link to rank 0
  std::vector<float> scratch_;
};

}  // namespace

std::unique_ptr<GradientAllReduce> make_single_rank_all_reduce() {
  return std::make_unique<SingleRankAllReduce>();
}

Expected<std::unique_ptr<GradientAllReduce>> connect_tcp_all_reduce(
    const TcpAllReduceOptions& options) {
  if (options.world_size < 1) {
    return error(fmt::format("WORLD_SIZE must be at least 1, got {}", options.world_size));
  }
  if (options.rank < 0 || options.rank >= options.world_size) {
    return error(fmt::format("RANK must be in [0, {}), got {}", options.world_size, options.rank));
  }
  if (options.world_size == 1) return make_single_rank_all_reduce();
  auto star = std::make_unique<TcpStarAllReduce>(options.rank, options.world_size, options.timeout);
  auto ok = options.rank == 0 ? star->listen(options) : star->connect(options);
  if (!ok) return unexpected(ok.error());
  return std::unique_ptr<GradientAllReduce>(std::move(star));
}

Expected<void> broadcast_from_rank0(GradientAllReduce& all_reduce, std::span<float> values) {
  if (all_reduce.rank() != 0) std::fill(values.begin(), values.end(), 0.0f);
  return all_reduce.sum(values);
}

}  // namespace depl::worker
