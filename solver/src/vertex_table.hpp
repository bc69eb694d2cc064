// Internal to the solver: the set of settled vertices of the expanded schedule graph, an
// open-addressing hash table from (layer, m cell, s2 cell) to the fewest epochs with which the
// vertex was settled. A std::unordered_map costs several times more per lookup, and lookups are
// the inner loop of the search.
#pragma once

#include <cstdint>
#include <vector>

namespace depl::solver::internal {

struct VertexKey {
  std::uint32_t layer = 0;  // (variant, switches used, placement) packed by the caller
  std::int32_t mean_cell = 0;
  std::int32_t variance_cell = 0;
  friend bool operator==(const VertexKey&, const VertexKey&) = default;
};

class VertexTable {
 public:
  VertexTable() { clear(); }

  void clear() {
    slots_.assign(1024, Slot{});
    size_ = 0;
  }

  // The epochs stored for `key`, or -1 when the vertex is not settled.
  int find(const VertexKey& key) const {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.epochs < 0) return -1;
      if (s.key == key) return s.epochs;
    }
  }

  // Stores min(existing, epochs).
  void settle(const VertexKey& key, int epochs) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    insert(key, epochs);
  }

  std::size_t size() const { return size_; }
  // The memory the table holds.
  std::size_t bytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  struct Slot {
    VertexKey key;
    int epochs = -1;
  };

  static std::size_t hash(const VertexKey& k) {
    std::uint64_t h = (static_cast<std::uint64_t>(k.layer) * 0x9E3779B97F4A7C15ULL) ^
                      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.mean_cell)) << 32 |
                       static_cast<std::uint32_t>(k.variance_cell));
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 29;
    return static_cast<std::size_t>(h);
  }

  void insert(const VertexKey& key, int epochs) {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.epochs < 0) {
        s.key = key;
        s.epochs = epochs;
        ++size_;
        return;
      }
      if (s.key == key) {
        if (epochs < s.epochs) s.epochs = epochs;
        return;
      }
    }
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{});
    size_ = 0;
    for (const Slot& s : old) {
      if (s.epochs >= 0) insert(s.key, s.epochs);
    }
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace depl::solver::internal
