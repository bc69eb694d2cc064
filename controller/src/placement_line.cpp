#include "depl/controller/placement_line.hpp"

#include <algorithm>

#include "depl/common/json_fields.hpp"
#include "depl/controller/job_status.hpp"

namespace depl::controller {

using nlohmann::json;

namespace {

int gpus_per_worker(const json& job, const std::string& model) {
  const json& spec = json_object(job, "spec");
  auto models = spec.find("models");
  if (models == spec.end() || !models->is_array()) return 1;
  for (const auto& m : *models) {
    if (m.is_object() && json_string(m, "name") == model)
      return std::max(1, m.value("gpusPerWorker", 1));
  }
  return 1;
}

}  // namespace

bool awaits_first_plan(const json& job) {
  const json& meta = json_object(job, "metadata");
  if (meta.contains("deletionTimestamp")) return false;
  if (json_object(job, "spec").value("suspend", false)) return false;
  const json& status = json_object(job, "status");
  const std::string phase = json_string(status, "phase");
  if (phase == "Succeeded" || phase == "Failed" || phase == "Suspended") return false;
  // Planned (either way) or invalid: it has had its turn and claims what its plan says.
  if (condition_status(status, conditions::kPlanned).has_value()) return false;
  if (condition_status(status, "Valid") == false) return false;
  return !status.contains("plan");
}

// Had its turn and found no room: Pending without a plan, Planned=False for Infeasible.
bool waits_for_capacity(const json& job) {
  const json& meta = json_object(job, "metadata");
  if (meta.contains("deletionTimestamp")) return false;
  if (json_object(job, "spec").value("suspend", false)) return false;
  const json& status = json_object(job, "status");
  if (json_string(status, "phase") != "Pending" || status.contains("plan")) return false;
  const json& conditions = json_member(status, "conditions");
  if (!conditions.is_array()) return false;
  for (const auto& c : conditions) {
    if (json_string(c, "type") == conditions::kPlanned) {
      return json_string(c, "status") == "False" && json_string(c, "reason") == "Infeasible";
    }
  }
  return false;
}

PlacementLine::PlacementLine(GpuLedger& gpus) : gpus_(gpus) {
  gpus_.on_owner_change([this](const std::string& uid) { owner_changed(uid); });
}

PlacementLine::Rank PlacementLine::rank_of(const json& job) {
  const json& meta = json_object(job, "metadata");
  return {json_string(meta, "creationTimestamp"), json_string(meta, "namespace"),
          json_string(meta, "name")};
}

bool node_may_add_room(const json* before, const json& after) {
  const int now = node_offered_gpus(after);
  if (now == 0) return false;
  if (before == nullptr) return true;
  if (now > node_offered_gpus(*before)) return true;
  const json& was = json_member(*before, "metadata");
  const json& is = json_member(after, "metadata");
  return json_member(was, "labels") != json_member(is, "labels") ||
         json_member(was, "annotations") != json_member(is, "annotations");
}

kube::ResourceEventHandlers PlacementLine::node_handlers() {
  kube::ResourceEventHandlers h;
  h.on_add = [this](const kube::ObjectPtr& node) {
    if (node_may_add_room(nullptr, *node)) room_may_have_grown();
  };
  h.on_update = [this](const kube::ObjectPtr& old_node, const kube::ObjectPtr& node) {
    if (node_may_add_room(old_node.get(), *node)) room_may_have_grown();
  };
  return h;
}

void PlacementLine::room_may_have_grown() {
  std::lock_guard lock(mutex_);
  ++capacity_epoch_;
}

kube::ResourceEventHandlers PlacementLine::handlers() {
  kube::ResourceEventHandlers h;
  h.on_add = [this](const kube::ObjectPtr& job) { put(*job); };
  h.on_update = [this](const kube::ObjectPtr&, const kube::ObjectPtr& job) { put(*job); };
  h.on_delete = [this](const kube::ObjectPtr& job) { remove(*job); };
  return h;
}

std::string PlacementLine::key_of(const Rank& rank) {
  return std::get<1>(rank) + "/" + std::get<2>(rank);
}

PlacementLine::Entry PlacementLine::entry_of(const json& job) {
  Entry entry;
  const json& meta = json_object(job, "metadata");
  entry.uid = json_string(meta, "uid");
  entry.awaits_first_plan = awaits_first_plan(job);
  entry.waits_for_capacity = waits_for_capacity(job);
  // What it reserves: the phase in force of a Pending or Running job with a plan.
  const json& status = json_object(job, "status");
  const std::string phase = json_string(status, "phase");
  const json& plan = json_object(status, "plan");
  auto phases = plan.find("phases");
  if ((phase == "Running" || phase == "Pending") && !meta.contains("deletionTimestamp") &&
      phases != plan.end() && phases->is_array() && !phases->empty()) {
    int in_force = json_object(status, "progress").value("phase", 0);
    in_force = std::clamp(in_force, 0, static_cast<int>(phases->size()) - 1);
    const json& record = (*phases)[static_cast<std::size_t>(in_force)];
    const int workers = record.is_object() ? record.value("workers", 0) : 0;
    if (workers >= 1 && !json_string(record, "pool").empty()) {
      entry.pool = json_string(record, "pool");
      entry.gpus = workers * gpus_per_worker(job, json_string(record, "model"));
    }
  }
  return entry;
}

void PlacementLine::put(const json& job) {
  Rank rank = rank_of(job);
  Entry entry = entry_of(job);
  std::lock_guard lock(mutex_);
  if (auto assumed = assumed_.find(key_of(rank)); assumed != assumed_.end()) {
    if (assumed->second.uid == entry.uid && entry.awaits_first_plan) {
      // From before the write the reconciler assumed: remember it (forget() goes back to it)
      // without undoing the assumption.
      assumed->second.observed = {std::move(rank), std::move(entry)};
      return;
    }
    assumed_.erase(assumed);  // the informer caught up (or the job was recreated)
  }
  put_locked(std::move(rank), std::move(entry));
}

void PlacementLine::assume(const json& job) {
  Rank rank = rank_of(job);
  Entry entry = entry_of(job);
  if (entry.awaits_first_plan) return;  // nothing to get ahead of the watch for
  const std::string key = key_of(rank);
  std::lock_guard lock(mutex_);
  auto [assumed, first] = assumed_.try_emplace(key);
  if (first || assumed->second.uid != entry.uid) {
    assumed->second.uid = entry.uid;
    assumed->second.observed.reset();
    if (auto at = by_key_.find(key); at != by_key_.end()) {
      if (auto old = line_.find(at->second); old != line_.end())
        assumed->second.observed = {old->first, old->second};
    }
  }
  put_locked(std::move(rank), std::move(entry));
}

void PlacementLine::forget(const json& job) {
  const std::string key = key_of(rank_of(job));
  std::lock_guard lock(mutex_);
  auto assumed = assumed_.find(key);
  if (assumed == assumed_.end()) return;  // the informer's version stands
  std::optional<std::pair<Rank, Entry>> observed = std::move(assumed->second.observed);
  assumed_.erase(assumed);
  // Back to what the informer last delivered, not to the reconciler's copy of the job, which
  // may be older than that (a retry from a cache that had not seen its own earlier write yet).
  if (observed) {
    put_locked(std::move(observed->first), std::move(observed->second));
  } else {
    put_locked(rank_of(job), entry_of(job));
  }
}

void PlacementLine::put_locked(Rank rank, Entry entry) {
  const std::string key = key_of(rank);
  if (auto old = by_key_.find(key); old != by_key_.end() && old->second != rank) {
    erase_locked(old->second);  // recreated under the same name
  }
  by_key_[key] = rank;
  if (entry.waits_for_capacity) {
    waiting_for_capacity_.insert(rank);
  } else {
    waiting_for_capacity_.erase(rank);
  }
  if (auto old = line_.find(rank); old != line_.end() && old->second.uid == entry.uid) {
    entry.looked_at = old->second.looked_at;
    // It reserves less (or elsewhere): room for the others grew.
    if (old->second.gpus > 0 && (old->second.pool != entry.pool || old->second.gpus > entry.gpus))
      ++capacity_epoch_;
  }
  if (entry.awaits_first_plan) {
    awaiting_.insert(rank);
  } else {
    awaiting_.erase(rank);
  }
  if (auto same = line_.find(rank); same != line_.end() && same->second.uid != entry.uid) {
    if (auto u = by_uid_.find(same->second.uid); u != by_uid_.end() && u->second == rank)
      by_uid_.erase(u);
  }
  auto at = line_.insert_or_assign(std::move(rank), std::move(entry)).first;
  Entry& stored = at->second;
  if (!stored.uid.empty()) by_uid_[stored.uid] = at->first;
  update_missing_locked(at->first, stored);
}

void PlacementLine::erase_locked(const Rank& rank) {
  auto it = line_.find(rank);
  if (it != line_.end()) {
    if (auto u = by_uid_.find(it->second.uid); u != by_uid_.end() && u->second == rank)
      by_uid_.erase(u);
    if (it->second.gpus > 0) ++capacity_epoch_;
    line_.erase(it);
  }
  awaiting_.erase(rank);
  waiting_for_capacity_.erase(rank);
  unfulfilled_.erase(rank);
}

void PlacementLine::update_missing_locked(const Rank& rank, Entry& entry) {
  entry.missing = entry.gpus > 0 ? std::max(0, entry.gpus - gpus_.held_by(entry.uid)) : 0;
  if (entry.missing > 0) {
    unfulfilled_.insert(rank);
  } else {
    unfulfilled_.erase(rank);
  }
}

void PlacementLine::owner_changed(const std::string& uid) {
  if (uid.empty()) return;
  std::lock_guard lock(mutex_);
  // Only freed GPUs can make room: taking them never does.
  const int held = gpus_.held_by(uid);
  auto seen = held_seen_.find(uid);
  if (seen != held_seen_.end() && held < seen->second) ++capacity_epoch_;
  if (held > 0) {
    held_seen_[uid] = held;
  } else if (seen != held_seen_.end()) {
    held_seen_.erase(seen);
  }
  auto u = by_uid_.find(uid);
  if (u == by_uid_.end()) return;
  auto it = line_.find(u->second);
  if (it != line_.end()) update_missing_locked(it->first, it->second);
}

void PlacementLine::remove(const json& job) {
  const json& meta = json_object(job, "metadata");
  const std::string key = json_string(meta, "namespace") + "/" + json_string(meta, "name");
  std::lock_guard lock(mutex_);
  assumed_.erase(key);
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return;
  erase_locked(it->second);
  by_key_.erase(it);
}

const PlacementLine::Rank* PlacementLine::unseen_waiting_locked() const {
  for (const Rank& rank : waiting_for_capacity_) {
    auto it = line_.find(rank);
    if (it != line_.end() && it->second.looked_at < capacity_epoch_) return &rank;
  }
  return nullptr;
}

std::string PlacementLine::unplanned_before(const json& job) const {
  const Rank own = rank_of(job);
  std::lock_guard lock(mutex_);
  const Rank* first = awaiting_.empty() ? nullptr : &*awaiting_.begin();
  if (const Rank* unseen = unseen_waiting_locked(); unseen && (!first || *unseen < *first)) {
    first = unseen;
  }
  if (!first || !(*first < own)) return "";
  return std::get<1>(*first) + "/" + std::get<2>(*first);
}

std::optional<kube::ObjectKey> PlacementLine::next() const {
  std::lock_guard lock(mutex_);
  const Rank* first = awaiting_.empty() ? nullptr : &*awaiting_.begin();
  if (const Rank* unseen = unseen_waiting_locked(); unseen && (!first || *unseen < *first)) {
    first = unseen;
  }
  if (!first) return std::nullopt;
  return kube::ObjectKey{std::get<1>(*first), std::get<2>(*first)};
}

std::uint64_t PlacementLine::capacity_epoch() const {
  std::lock_guard lock(mutex_);
  return capacity_epoch_;
}

void PlacementLine::looked_at(const json& job, std::uint64_t epoch) {
  const Rank rank = rank_of(job);
  std::lock_guard lock(mutex_);
  auto it = line_.find(rank);
  if (it == line_.end() || it->second.uid != json_string(json_object(job, "metadata"), "uid")) {
    return;
  }
  it->second.looked_at = std::max(it->second.looked_at, epoch);
}

std::vector<Reservation> PlacementLine::reservations_before(const json& job) const {
  const Rank own = rank_of(job);
  std::vector<Reservation> out;
  std::lock_guard lock(mutex_);
  for (auto it = unfulfilled_.begin(); it != unfulfilled_.end() && *it < own; ++it) {
    const Entry& e = line_.at(*it);
    out.push_back({e.pool, e.missing});
  }
  return out;
}

}  // namespace depl::controller
