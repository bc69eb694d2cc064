// depl-crd-reference CRD_FILE: prints the Markdown API reference of the CustomResourceDefinition
// in CRD_FILE (one YAML document) on stdout. `make reference-docs` writes docs/reference.md with
// it; tests/controller/docs_reference_test.cpp fails when the checked-in file differs.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "depl/common/yaml_json.hpp"
#include "depl/packaging/crd_reference.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: depl-crd-reference CRD_FILE\n";
    return 2;
  }
  const std::string path = argv[1];
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "depl-crd-reference: cannot read " << path << "\n";
    return 1;
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto crd = depl::yaml_to_json(text.str(), path);
  if (!crd) {
    std::cerr << "depl-crd-reference: " << crd.error().message << "\n";
    return 1;
  }
  if (!crd->is_object() || crd->value("kind", "") != "CustomResourceDefinition") {
    std::cerr << "depl-crd-reference: " << path << " is not a CustomResourceDefinition\n";
    return 1;
  }
  for (const char* field :
       {"/spec/group", "/spec/scope", "/spec/names/kind", "/spec/names/plural",
        "/spec/versions/0/name", "/spec/versions/0/schema/openAPIV3Schema/properties"}) {
    if (!crd->contains(nlohmann::json::json_pointer(field))) {
      std::cerr << "depl-crd-reference: " << path << " has no " << field << "\n";
      return 1;
    }
  }
  try {
    std::cout << depl::packaging::crd_reference_markdown(*crd, path);
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "depl-crd-reference: " << path << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
