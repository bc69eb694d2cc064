#include "file_util.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace depl::kube {

Expected<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return error(path + ": cannot read: " + std::strerror(errno));
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return error(path + ": read failed: " + std::strerror(errno));
  return out.str();
}

std::string resolve_relative(const std::string& path, const std::string& dir) {
  if (path.empty() || path.front() == '/' || dir.empty()) return path;
  return dir + "/" + path;
}

}  // namespace depl::kube
