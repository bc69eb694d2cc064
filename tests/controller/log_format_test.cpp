// --log-format json: every line is a JSON object whatever the message holds. Before, the pattern
// pasted the key=value text between quotes, and its own quotes (msg="...") broke every line.
#include "depl/controller/log_format.hpp"

#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace depl::controller {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(LogFormat, JsonLinesParseWhateverTheMessageHolds) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  auto formatter = log_formatter("json");
  ASSERT_TRUE(formatter) << formatter.error().message;
  sink->set_formatter(std::move(*formatter));
  spdlog::logger logger("test", sink);
  const std::vector<std::string> messages = {
      R"(msg="caches synced; reconciling" progress_url=http://127.0.0.1:8081)",
      "error=\"a \\\"quoted\\\" answer\" path=C:\\temp",
      "two\nlines\tand a tab and \x01 a control byte",
      "not UTF-8: \xff\xfe job=caf\xc3",
  };
  for (const auto& m : messages) logger.warn("{}", m);
  logger.flush();
  const auto lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), messages.size()) << out.str();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto parsed = nlohmann::json::parse(lines[i], nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << lines[i];
    EXPECT_EQ(parsed["level"], "warning");
    EXPECT_TRUE(parsed["time"].get<std::string>().ends_with("Z"));
    if (i < 3) {
      EXPECT_EQ(parsed["line"], messages[i]);  // valid UTF-8 comes back as it was
    }
  }
  EXPECT_NE(nlohmann::json::parse(lines[3])["line"].get<std::string>().find("job=caf"),
            std::string::npos);
}

TEST(LogFormat, TextAndUnknownFormats) {
  EXPECT_TRUE(log_formatter("text"));
  auto unknown = log_formatter("yaml");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("--log-format"), std::string::npos);
}

}  // namespace
}  // namespace depl::controller
