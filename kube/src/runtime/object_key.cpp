// ObjectKey formatting and extraction from object metadata.
#include "depl/kube/runtime/object_key.hpp"

namespace depl::kube {

std::string ObjectKey::to_string() const {
  if (namespace_.empty()) return name;
  std::string text;
  text.reserve(namespace_.size() + 1 + name.size());
  text.append(namespace_).append("/").append(name);
  return text;
}

ObjectKey ObjectKey::of(const nlohmann::json& object) {
  ObjectKey key;
  const auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return key;
  if (const auto ns = metadata->find("namespace"); ns != metadata->end() && ns->is_string()) {
    key.namespace_ = ns->get<std::string>();
  }
  if (const auto name = metadata->find("name"); name != metadata->end() && name->is_string()) {
    key.name = name->get<std::string>();
  }
  return key;
}

}  // namespace depl::kube
