#include "depl/controller/controller_election.hpp"

#include <algorithm>

namespace depl::controller {

bool WriteFence::open() const {
  const kube::LeaderElector* elector = elector_.load();
  return elector != nullptr && elector->holds_lease();
}

std::function<bool()> WriteFence::predicate() const {
  return [this] { return open(); };
}

Expected<void> run_elected(std::shared_ptr<kube::Transport> transport,
                           std::shared_ptr<kube::CredentialProvider> credentials,
                           kube::ClientOptions client_options, Clock& clock, RandomSource& random,
                           kube::LeaderElectionConfig config, WriteFence& fence,
                           ElectionHooks hooks, std::stop_token stop) {
  client_options.write_fence = nullptr;
  client_options.retry.max_attempts = 1;
  client_options.request_timeout = std::max<std::chrono::milliseconds>(
      std::chrono::milliseconds(100), config.renew_deadline / 2);
  kube::Client client(std::move(transport), std::move(credentials), client_options);
  config.callbacks.on_started_leading = [&hooks](std::stop_token leading) {
    if (hooks.started) hooks.started();
    if (hooks.lead) hooks.lead(leading);
  };
  config.callbacks.on_stopped_leading = [&hooks] {
    if (hooks.stopped) hooks.stopped();
  };
  auto elector = kube::LeaderElector::create(client, clock, random, std::move(config));
  if (!elector) return error("leader election: " + elector.error().message);
  fence.watch(elector->get());
  (*elector)->run(stop);
  fence.watch(nullptr);
  client.stop();
  return {};
}

}  // namespace depl::controller
