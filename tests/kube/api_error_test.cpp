// ApiError from Status bodies, plain bodies, Retry-After and watch ERROR objects.
#include "depl/kube/api_error.hpp"

#include <gtest/gtest.h>

namespace depl::kube {
namespace {

TEST(ApiError, FromStatusBody) {
  auto error = ApiError::from_response(
      404,
      R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"x\" not found",
          "reason":"NotFound","details":{"name":"x","kind":"pods"},"code":404})");
  EXPECT_EQ(error.code, 404);
  EXPECT_EQ(error.reason, "NotFound");
  EXPECT_EQ(error.message, "pods \"x\" not found");
  EXPECT_EQ(error.details["name"], "x");
  EXPECT_TRUE(error.is_not_found());
  EXPECT_FALSE(error.is_conflict());
  EXPECT_EQ(error.to_string(), "404 NotFound: pods \"x\" not found");
}

TEST(ApiError, PredicatesFollowTheCode) {
  EXPECT_TRUE(
      ApiError::from_response(409, R"({"kind":"Status","reason":"AlreadyExists","code":409})")
          .is_already_exists());
  EXPECT_TRUE(ApiError::from_response(409, R"({"kind":"Status","reason":"Conflict","code":409})")
                  .is_conflict());
  // Newer servers say Expired, older Gone: both are 410.
  EXPECT_TRUE(
      ApiError::from_response(410, R"({"kind":"Status","reason":"Expired","code":410})").is_gone());
  EXPECT_TRUE(ApiError::from_response(422, "{}").is_invalid());
  EXPECT_TRUE(ApiError::from_response(401, "").is_unauthorized());
  EXPECT_TRUE(ApiError::from_response(403, "").is_forbidden());
  EXPECT_TRUE(ApiError::from_response(503, "").is_server_error());
  EXPECT_TRUE(ApiError::transport(ApiError::kTimeout, "x").is_timeout());
  EXPECT_TRUE(ApiError::transport(ApiError::kConnectFailed, "x").is_transport());
}

TEST(ApiError, PlainBodyAndRetryAfter) {
  auto error = ApiError::from_response(429, "slow down\n", "7");
  EXPECT_EQ(error.reason, "TooManyRequests");
  EXPECT_EQ(error.message, "slow down");
  ASSERT_TRUE(error.retry_after);
  EXPECT_EQ(*error.retry_after, std::chrono::seconds(7));
  EXPECT_FALSE(ApiError::from_response(429, "", "soon").retry_after);
  EXPECT_EQ(ApiError::from_response(500, "").message, "the server returned HTTP 500 with no body");
}

TEST(ApiError, RetryAfterFromStatusDetails) {
  auto error = ApiError::from_response(
      429,
      R"({"kind":"Status","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":3}})");
  ASSERT_TRUE(error.retry_after);
  EXPECT_EQ(*error.retry_after, std::chrono::seconds(3));
}

TEST(ApiError, HttpCodeWinsOverStatusCode) {
  auto error = ApiError::from_response(500, R"({"kind":"Status","code":0,"message":"boom"})");
  EXPECT_EQ(error.code, 500);
  EXPECT_EQ(error.reason, "InternalError");
}

TEST(ApiError, FromWatchErrorStatus) {
  auto error = ApiError::from_status(nlohmann::json::parse(
      R"json({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
          "message":"too old resource version: 5 (100)","reason":"Expired","code":410})json"));
  EXPECT_TRUE(error.is_gone());
  EXPECT_EQ(error.message, "too old resource version: 5 (100)");
  EXPECT_EQ(ApiError::from_status(nlohmann::json("x")).code, 500);
}

// Found by fuzz/watch_stream_fuzz.cpp: a watch ERROR whose code was no HTTP status kept it, and
// one past INT_MAX wrapped into a status (2^32 + 410 read as 410 made the watcher relist).
TEST(ApiError, StatusCodeThatIsNoHttpStatusBecomes500) {
  for (const char* code : {"5", "99", "600", "-410", "4294967706", "18446744073709551615"}) {
    auto error = ApiError::from_status(
        nlohmann::json::parse(std::string(R"({"kind":"Status","code":)") + code + "}"));
    EXPECT_EQ(error.code, 500) << code;
    EXPECT_FALSE(error.is_gone()) << code;
  }
  EXPECT_EQ(ApiError::from_status(nlohmann::json::parse(R"({"code":429})")).code, 429);
}

}  // namespace
}  // namespace depl::kube
