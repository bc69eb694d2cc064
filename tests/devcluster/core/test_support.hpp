// Shared fixtures of the core tests: a store with a fixed clock, the project's CRD, and short
// request helpers.
#pragma once

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "depl/common/yaml_json.hpp"
#include "depl/devcluster/api_store.hpp"

namespace depl::devcluster::testing {

using nlohmann::json;

// 2026-01-01T00:00:00Z plus whatever the test advances.
struct FixedClock {
  std::chrono::system_clock::time_point now = std::chrono::system_clock::from_time_t(1767225600);
};

inline json load_yaml(const std::string& relative) {
  std::ifstream in(std::string(DEPL_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = yaml_to_json(text.str(), relative);
  EXPECT_TRUE(parsed) << relative << ": " << (parsed ? "" : parsed.error().message);
  return parsed ? *parsed : json();
}

inline json dtj_crd() {
  return load_yaml("crds/depl.dev_dependabletrainingjobs.yaml");
}

inline ResourceRef core(const std::string& plural, const std::string& ns = "",
                        const std::string& name = "", const std::string& sub = "") {
  return {"", "v1", plural, ns, name, sub};
}

inline ResourceRef dtj(const std::string& ns = "default", const std::string& name = "",
                       const std::string& sub = "") {
  return {"depl.dev", "v1alpha1", "dependabletrainingjobs", ns, name, sub};
}

inline ResourceRef crds(const std::string& name = "") {
  return {"apiextensions.k8s.io", "v1", "customresourcedefinitions", "", name, ""};
}

inline json a_job(const std::string& name) {
  return json::parse(R"({"apiVersion":"depl.dev/v1alpha1","kind":"DependableTrainingJob",
    "metadata":{"name":")" +
                     name + R"("},
    "spec":{"target":{"loss":0.3},
            "datasets":[{"name":"d","samples":1000}],
            "models":[{"name":"m","image":"img","computePerSampleGflop":1.5,
                       "lossProfile":{"initialLoss":2.3,"floorLoss":0.1,"decayPerEpoch":0.5}}]}})");
}

inline json a_pod(const std::string& name, const json& labels = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", {{"containers", json::array({{{"name", "main"}, {"image", "busybox:1"}}})}}}};
}

class StoreTest : public ::testing::Test {
 protected:
  FixedClock clock;
  ApiStore store{StoreOptions{100, [this] { return clock.now; }, false, 7}};

  void install_crd() {
    ApiResult r = store.create(crds(), dtj_crd());
    ASSERT_EQ(r.code, 201) << r.body.dump();
  }
  json must(const ApiResult& r, int code = 200) {
    EXPECT_EQ(r.code, code) << r.body.dump();
    return r.body;
  }
  std::string rv_of(const json& o) { return o["metadata"]["resourceVersion"].get<std::string>(); }
};

}  // namespace depl::devcluster::testing
