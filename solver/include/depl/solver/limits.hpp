// The largest inputs the solver admits, a job's and a pools file's. Sized so that the largest
// admitted job is planned, or declared over budget, within the default solve budget
// (docs/benchmarks.md, "Solver budget"). The DependableTrainingJob schema states them in its
// descriptions but does not enforce them: a bound the API server enforced would refuse every
// update of a job stored under a looser one, its finalizer's removal included. The CLI refuses a
// job past them; the controller reads it, keeps it, and does not plan it (docs/user-guide.md).
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

// The bounds a stored job is read under (parse.hpp, JobLimits::Stored): past them a job is
// invalid, not only unplanned. The sizes above have none there.
inline constexpr int kStoredMaxEpochs = 100'000;  // spec.training.maxEpochs
inline constexpr int kStoredMaxSwitches = 1'000;  // spec.training.maxSwitches

}  // namespace depl::solver::limits
