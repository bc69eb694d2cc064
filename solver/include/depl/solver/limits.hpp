// The largest inputs the solver admits: the DependableTrainingJob schema's maxItems, maxLength and
// maximum (crds/depl.dev_dependabletrainingjobs.yaml says the same; tests/solver/limits_test.cpp
// keeps the two equal) and the pools file's. Sized so that the largest admitted job is planned,
// or declared over budget, within the default solve budget (docs/benchmarks.md, "Solver budget").
#pragma once

#include <cstddef>

namespace depl::solver::limits {

inline constexpr std::size_t kDatasets = 64;                       // spec.datasets
inline constexpr std::size_t kModels = 12;                         // spec.models
inline constexpr std::size_t kSwitches = kModels * (kModels - 1);  // spec.switching: every pair
inline constexpr std::size_t kLocality = 32;                       // spec.datasets[].locality
inline constexpr std::size_t kNameLength = 63;     // names: datasets, models, pools, locality
inline constexpr std::size_t kImageLength = 512;   // spec.models[].image
inline constexpr int kMaxEpochs = 1000;            // spec.training.maxEpochs
inline constexpr int kMaxSwitches = 4;             // spec.training.maxSwitches
inline constexpr int kWorkers = 64;                // spec.training.workers.min and .max
inline constexpr int kGpusPerWorker = 16;          // spec.models[].gpusPerWorker
inline constexpr int kBatchSize = 1 << 20;         // spec.training.batchSize
inline constexpr std::size_t kPools = 64;          // a pools file's pools
inline constexpr std::size_t kInterPool = kPools;  // a pool's interPool entries

}  // namespace depl::solver::limits
