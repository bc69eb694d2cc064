#include "depl/worker/momentum_sgd.hpp"

#include <cassert>

namespace depl::worker {

MomentumSgd::MomentumSgd(std::size_t parameter_count, SgdOptions options)
    : options_(options), velocity_(parameter_count, 0.0f) {}

void MomentumSgd::step(std::span<float> parameters, std::span<const float> gradient,
                       float gradient_scale) {
  assert(parameters.size() == velocity_.size() && gradient.size() >= velocity_.size());
  const float mu = options_.momentum;
  const float lr = options_.learning_rate;
  for (std::size_t i = 0; i < velocity_.size(); ++i) {
    velocity_[i] = mu * velocity_[i] + gradient_scale * gradient[i];
    parameters[i] -= lr * velocity_[i];
  }
}

}  // namespace depl::worker
