// The reference worker's model: a multilayer perceptron inputs -> hidden -> hidden -> classes
// with ReLU and a softmax cross-entropy loss. All parameters live in one contiguous buffer (so
// SGD, the all-reduce and checkpoints each see a single span); layers are Eigen views into it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <span>
#include <vector>

#include <Eigen/Core>

namespace depl::worker {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixView = Eigen::Map<RowMatrix>;
using ConstMatrixView = Eigen::Map<const RowMatrix>;
using RowVectorView = Eigen::Map<Eigen::RowVectorXf>;
using ConstRowVectorView = Eigen::Map<const Eigen::RowVectorXf>;

// Allocates on 64-byte boundaries: Eigen's kernels take different (and differently rounded)
// paths for differently aligned data, and a resumed run must repeat an uninterrupted one exactly.
template <typename T>
struct CacheAlignedAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};
  CacheAlignedAllocator() = default;
  template <typename U>
  CacheAlignedAllocator(const CacheAlignedAllocator<U>&) noexcept {}  // NOLINT
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlignment)); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, kAlignment); }
  bool operator==(const CacheAlignedAllocator&) const = default;
};

struct MlpShape {
  int inputs = 0;
  int hidden = 0;  // units of each of the two hidden layers
  int classes = 0;
  std::size_t parameter_count() const;
  bool operator==(const MlpShape&) const = default;
};

// Weights are stored inputs x outputs (row-major), so a batch (one sample per row) times a weight
// matrix is the layer's pre-activation.
class MlpParameters {
 public:
  MlpParameters() = default;
  explicit MlpParameters(MlpShape shape);  // all zero

  const MlpShape& shape() const { return shape_; }
  std::span<float> values() { return values_; }
  std::span<const float> values() const { return values_; }

  MatrixView w1();
  RowVectorView b1();
  MatrixView w2();
  RowVectorView b2();
  MatrixView w3();
  RowVectorView b3();
  ConstMatrixView w1() const;
  ConstRowVectorView b1() const;
  ConstMatrixView w2() const;
  ConstRowVectorView b2() const;
  ConstMatrixView w3() const;
  ConstRowVectorView b3() const;

 private:
  MlpShape shape_;
  std::vector<float, CacheAlignedAllocator<float>> values_;
};

// He-normal weights (suits ReLU), zero biases; the same seed gives the same network.
void initialise_parameters(MlpParameters& parameters, std::uint64_t seed);

struct BatchResult {
  double loss_sum = 0.0;  // summed cross-entropy over the batch
  int correct = 0;        // samples whose arg-max class is the label
};

// Forward and backward passes over batches of up to max_batch samples. Owns every buffer a pass
// needs, allocated once: the training loop allocates nothing per batch or per sample. Not
// thread-safe; one kernel per thread.
class MlpBatchKernel {
 public:
  MlpBatchKernel(MlpShape shape, int max_batch);

  const MlpShape& shape() const { return shape_; }
  int max_batch() const { return max_batch_; }
  // Rows [0, n) hold the batch's inputs; the caller fills them before a pass.
  RowMatrix& inputs() { return inputs_; }

  // Loss and accuracy of the first labels.size() rows of inputs().
  BatchResult evaluate(const MlpParameters& parameters, std::span<const std::uint8_t> labels);
  // Also writes the gradient of the summed loss (not the mean) into gradient, which must have the
  // same shape: sums add up across data-parallel ranks.
  BatchResult loss_and_gradient(const MlpParameters& parameters,
                                std::span<const std::uint8_t> labels, MlpParameters& gradient);

 private:
  BatchResult forward(const MlpParameters& parameters, std::span<const std::uint8_t> labels);

  MlpShape shape_;
  int max_batch_;
  RowMatrix inputs_;
  RowMatrix hidden1_;  // post-ReLU activations; reused for their gradients on the way back
  RowMatrix hidden2_;
  RowMatrix output_;  // probabilities after forward, then d(loss)/d(logits)
  RowMatrix delta1_;
  RowMatrix delta2_;
};

}  // namespace depl::worker
