// Typed views: accessors and safe defaults on missing or mistyped fields.
#include "depl/kube/typed.hpp"

#include <gtest/gtest.h>

namespace depl::kube {
namespace {

using nlohmann::json;

TEST(TypedViews, PodFieldsAndOwner) {
  const json pod = json::parse(R"({
    "metadata":{"name":"w-0","namespace":"ml","uid":"u","resourceVersion":"9","generation":2,
      "labels":{"depl.dev/job":"j"},"finalizers":["f"],
      "ownerReferences":[{"apiVersion":"depl.dev/v1alpha1","kind":"DependableTrainingJob",
        "name":"j","uid":"owner","controller":true,"blockOwnerDeletion":true}]},
    "spec":{"nodeName":"n1"},
    "status":{"phase":"Running","podIP":"10.0.0.1",
      "conditions":[{"type":"Ready","status":"True"}],
      "containerStatuses":[{"restartCount":2},{"restartCount":1}]}})");
  PodView view(pod);
  EXPECT_EQ(view.key(), "ml/w-0");
  EXPECT_EQ(view.phase(), "Running");
  EXPECT_EQ(view.node_name(), "n1");
  EXPECT_TRUE(view.is_ready());
  EXPECT_EQ(view.restart_count(), 3);
  EXPECT_EQ(view.generation(), 2);
  EXPECT_EQ(view.label("depl.dev/job"), "j");
  EXPECT_EQ(view.label("absent"), "");
  auto owner = view.controller_reference();
  ASSERT_TRUE(owner);
  EXPECT_EQ(owner->uid, "owner");
  EXPECT_TRUE(owner->block_owner_deletion);
  EXPECT_EQ(owner->to_json()["kind"], "DependableTrainingJob");
}

TEST(TypedViews, MissingAndMistypedFieldsGiveDefaults) {
  const json odd =
      json::parse(R"({"metadata":{"name":5,"labels":[1]},"spec":"x","status":{"conditions":{}}})");
  PodView view(odd);
  EXPECT_EQ(view.name(), "");
  EXPECT_TRUE(view.labels().empty());
  EXPECT_EQ(view.node_name(), "");
  EXPECT_FALSE(view.is_ready());
  EXPECT_FALSE(view.controller_reference());
  const json null_json;
  EXPECT_EQ(NodeView(null_json).allocatable("cpu"), "");
}

TEST(TypedViews, NodeLeaseEvent) {
  const json node = json::parse(R"({"metadata":{"name":"n1"},"spec":{"unschedulable":true},
    "status":{"allocatable":{"nvidia.com/gpu":"8"},"conditions":[{"type":"Ready","status":"False"}]}})");
  NodeView n(node);
  EXPECT_EQ(n.key(), "n1");
  EXPECT_TRUE(n.is_unschedulable());
  EXPECT_FALSE(n.is_ready());
  EXPECT_EQ(n.allocatable("nvidia.com/gpu"), "8");
  const json lease = json::parse(R"({"spec":{"holderIdentity":"a","leaseDurationSeconds":15,
    "renewTime":"2026-01-01T00:00:00.000000Z","leaseTransitions":3}})");
  LeaseView l(lease);
  EXPECT_EQ(l.holder_identity(), "a");
  EXPECT_EQ(l.lease_duration_seconds(), 15);
  EXPECT_EQ(l.lease_transitions(), 3);
  const json event = json::parse(R"({"reason":"Planned","message":"m","type":"Normal","count":4,
    "involvedObject":{"name":"j"}})");
  EventView e(event);
  EXPECT_EQ(e.count(), 4);
  EXPECT_EQ(e.involved_object()["name"], "j");
}

}  // namespace
}  // namespace depl::kube
