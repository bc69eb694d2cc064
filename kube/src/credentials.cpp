#include "depl/kube/credentials.hpp"

#include "depl/common/base64.hpp"

namespace depl::kube {

std::string basic_authorization(std::string_view username, std::string_view password) {
  std::string joined(username);
  joined.push_back(':');
  joined.append(password);
  return "Basic " + depl::base64_encode(joined);
}

std::shared_ptr<StaticCredentials> StaticCredentials::bearer(std::string token) {
  return std::make_shared<StaticCredentials>(Credentials{"Bearer " + token, nullptr});
}

std::shared_ptr<StaticCredentials> StaticCredentials::basic(std::string_view username,
                                                            std::string_view password) {
  return std::make_shared<StaticCredentials>(
      Credentials{basic_authorization(username, password), nullptr});
}

}  // namespace depl::kube
