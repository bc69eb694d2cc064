// Small file helpers shared by the configuration loaders.
#pragma once

#include <string>
#include <string_view>

#include "depl/common/expected.hpp"

namespace depl::kube {

// The whole file; the error names the path and the OS reason.
Expected<std::string> read_file(const std::string& path);
// `path` unchanged when absolute, else joined onto `dir`.
std::string resolve_relative(const std::string& path, const std::string& dir);

}  // namespace depl::kube
