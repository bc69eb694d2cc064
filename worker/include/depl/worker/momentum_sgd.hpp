// Stochastic gradient descent with (heavy-ball) momentum over one flat parameter buffer:
// v = momentum * v + g; p -= learning_rate * v, the convention of PyTorch's SGD.
#pragma once

#include <span>
#include <vector>

namespace depl::worker {

struct SgdOptions {
  float learning_rate = 0.05f;
  float momentum = 0.9f;
};

class MomentumSgd {
 public:
  MomentumSgd(std::size_t parameter_count, SgdOptions options);

  // gradient_scale turns the summed gradient into a mean (1 / global batch size).
  void step(std::span<float> parameters, std::span<const float> gradient, float gradient_scale);

  // The velocity buffer: saved in checkpoints so that a resumed run continues exactly.
  std::span<float> velocity() { return velocity_; }
  std::span<const float> velocity() const { return velocity_; }

 private:
  SgdOptions options_;
  std::vector<float> velocity_;
};

}  // namespace depl::worker
