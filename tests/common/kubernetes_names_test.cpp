// Kubernetes' name rules, case by case against apimachinery's validation messages' examples.
#include "depl/common/kubernetes_names.hpp"

#include <gtest/gtest.h>

#include <string>

namespace depl {
namespace {

TEST(KubernetesNames, Dns1123Subdomain) {
  for (const char* ok : {"a", "example.com", "my-name", "0a.b-c", "a1"})
    EXPECT_TRUE(is_dns1123_subdomain(ok)) << ok;
  for (const char* bad : {"", "-a", "a-", ".a", "a.", "A", "a_b", "a/b", "a b"})
    EXPECT_FALSE(is_dns1123_subdomain(bad)) << bad;
  EXPECT_TRUE(is_dns1123_subdomain(std::string(253, 'a')));
  EXPECT_FALSE(is_dns1123_subdomain(std::string(254, 'a')));
}

TEST(KubernetesNames, Dns1123And1035LabelForms) {
  for (const char* fine : {"a", "0", "web-1", "1web"}) EXPECT_TRUE(has_dns1123_label_form(fine));
  for (const char* bad : {"", "-a", "a-", "a.b", "A", "a_b"})
    EXPECT_FALSE(has_dns1123_label_form(bad)) << bad;
  EXPECT_TRUE(has_dns1035_label_form("web-1"));
  EXPECT_FALSE(has_dns1035_label_form("1web"));  // a letter first
  EXPECT_FALSE(has_dns1035_label_form("web-"));
  // Length is checked apart: the form alone holds at any length.
  EXPECT_TRUE(has_dns1123_label_form(std::string(64, 'a')));
}

TEST(KubernetesNames, QualifiedNamesAndLabelValues) {
  for (const char* ok : {"MyName", "my.name", "123-abc", "example.com/fpga", "a/b_c"})
    EXPECT_TRUE(is_qualified_name(ok)) << ok;
  for (const char* bad : {"", "/a", "a/", "Example.com/a", "a/b/c", "-a", "a_", "a b"})
    EXPECT_FALSE(is_qualified_name(bad)) << bad;
  EXPECT_TRUE(is_qualified_name_part(std::string(63, 'a')));
  EXPECT_FALSE(is_qualified_name_part(std::string(64, 'a')));
  EXPECT_TRUE(is_label_value(""));
  EXPECT_TRUE(is_label_value("v1.2_3-x"));
  EXPECT_FALSE(is_label_value("a/b"));
  EXPECT_FALSE(is_label_value("_a"));
}

TEST(KubernetesNames, EnvVarNamesAndContainerResources) {
  for (const char* ok : {"my.env-name", "MY_ENV.NAME", "MyEnvName1", "_x", "-x", ".x"})
    EXPECT_TRUE(is_env_var_name(ok)) << ok;
  for (const char* bad : {"", "1A", "A=B", "A B", "é"}) EXPECT_FALSE(is_env_var_name(bad)) << bad;
  for (const char* ok : {"cpu", "memory", "ephemeral-storage", "hugepages-2Mi"})
    EXPECT_TRUE(is_standard_container_resource(ok)) << ok;
  for (const char* bad : {"gpu", "nvidia.com/gpu", "CPU", "storage"})
    EXPECT_FALSE(is_standard_container_resource(bad)) << bad;
}

}  // namespace
}  // namespace depl
