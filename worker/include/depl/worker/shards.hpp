// Named, disjoint shards of the training set (the "datasets" a DepL job chooses among) and the
// selection of a set of them as the samples one run trains on. A shard may carry label noise: a
// declared fraction of its labels replaced by wrong ones, chosen from a fixed seed so that the
// shard is the same dataset in every run, whatever the training seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "depl/common/expected.hpp"
#include "depl/worker/image_table.hpp"

namespace depl::worker {

struct ShardDefinition {
  std::string name;
  int first = 0;             // first row of the training table
  int count = 0;             // rows [first, first + count)
  double label_noise = 0.0;  // fraction of labels replaced by a different, random class
};

struct ShardLayout {
  std::vector<ShardDefinition> shards;
  std::uint64_t noise_seed = 20240101;  // seeds the noisy labels; part of the dataset, not the run
};

// `count` equal shards named shard0, shard1, ... over `total` rows (the remainder goes to none).
Expected<ShardLayout> equal_shards(int count, int total);

// A shards file (JSON): {"noiseSeed": 7, "shards": [{"name": "clean-a", "samples": 20000},
// {"name": "noisy-b", "samples": 20000, "labelNoise": 0.3}]}; shards are consecutive rows from
// row 0 and must fit in `total` rows. `origin` names the file in errors.
Expected<ShardLayout> parse_shards_json(const std::string& text, int total,
                                        const std::string& origin);

// `spec` is a shard count ("6"), the text of a shards file itself (starting with '{', so a pod
// can take its layout as an argument) or the path of a shards file.
Expected<ShardLayout> shard_layout_from_spec(const std::string& spec, int total);

// Applies "name=fraction,name=fraction" (the --label-noise flag) to a layout.
Expected<void> apply_label_noise(ShardLayout& layout, const std::string& spec);

// Rows of the training table the named shards need (so a loader can stop reading there).
Expected<int> rows_needed(const ShardLayout& layout, const std::vector<std::string>& names);

// Samples of one run: rows of a table with the labels to train on (noisy where declared).
struct SampleSet {
  const ImageTable* table = nullptr;
  std::vector<int> rows;
  std::vector<std::uint8_t> labels;
  int size() const { return static_cast<int>(rows.size()); }
};

// The union of the named shards, in the order given; unknown or repeated names are errors.
Expected<SampleSet> select_shards(const ImageTable& table, const ShardLayout& layout,
                                  const std::vector<std::string>& names, int classes);

// The first `limit` rows of a table with their true labels (a validation set).
SampleSet leading_rows(const ImageTable& table, int limit);

// Splits "a,b,c" into names, dropping empty entries and surrounding spaces.
std::vector<std::string> split_names(const std::string& list);

}  // namespace depl::worker
