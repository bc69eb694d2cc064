#include "depl/controller/trainer_progress.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace depl::controller {
namespace {

using nlohmann::json;

// A query parameter's value ("" when absent); no percent-decoding: the values are numbers.
std::optional<std::string> query_value(const std::string& query, const std::string& key) {
  std::size_t start = 0;
  while (start <= query.size()) {
    std::size_t end = query.find('&', start);
    if (end == std::string::npos) end = query.size();
    const std::string pair = query.substr(start, end - start);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) == key) {
      return eq == std::string::npos ? std::string() : pair.substr(eq + 1);
    }
    start = end + 1;
  }
  return std::nullopt;
}

Expected<int> query_int(const std::string& query, const char* key) {
  auto value = query_value(query, key);
  if (!value) {
    return error(fmt::format("{}: required in the query (the URL in {} carries it)", key,
                             kTrainerServerUrlEnv));
  }
  char* end = nullptr;
  const long v = std::strtol(value->c_str(), &end, 10);
  if (value->empty() || *end != '\0' || v < 0 || v > 1000000) {
    return error(fmt::format("{}: must be an integer >= 0, got \"{}\"", key, *value));
  }
  return static_cast<int>(v);
}

// A metric's value: Trainer sends strings ("0.52"); numbers are taken too.
Expected<double> metric_number(const json& value, const std::string& field) {
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (!text.empty() && *end == '\0') return v;
  }
  return error(fmt::format("{}: must be a number (as a string), got {}", field,
                           value.dump(-1, ' ', false, json::error_handler_t::replace)));
}

}  // namespace

std::string trainer_status_url(const std::string& base, const std::string& ns,
                               const std::string& job, std::size_t phase, int rank) {
  return fmt::format("{}{}/namespaces/{}/trainjobs/{}/status?phase={}&rank={}", base,
                     kTrainerStatusPathPrefix, ns, job, phase, rank);
}

Expected<std::optional<ProgressReport>> parse_trainer_report(const std::string& body,
                                                             const std::string& query) {
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return error(
        "body: must be a JSON object like {\"trainerStatus\":{\"metrics\":[{\"name\":"
        "\"currentEpoch\",\"value\":\"1\"},{\"name\":\"eval_loss\",\"value\":\"0.5\"}]}}");
  }
  auto phase = query_int(query, "phase");
  if (!phase) return unexpected(phase.error());
  auto rank = query_int(query, "rank");
  if (!rank) return unexpected(rank.error());
  auto status = parsed.find("trainerStatus");
  if (status == parsed.end() || status->is_null()) return std::optional<ProgressReport>();
  if (!status->is_object()) return error("trainerStatus: must be an object");
  auto metrics = status->find("metrics");
  if (metrics == status->end() || metrics->is_null()) return std::optional<ProgressReport>();
  if (!metrics->is_array()) return error("trainerStatus.metrics: must be an array");

  // The first metric of each name, by preference: the validation loss is what the job's target
  // is about; the training loss stands in when a callback reports no other.
  static const char* const kLossNames[] = {"eval_loss", "val_loss", "validation_loss", "loss"};
  static const char* const kEpochNames[] = {"currentEpoch", "epoch"};
  std::optional<double> loss, epoch;
  int loss_rank = 99, epoch_rank = 99;
  for (std::size_t i = 0; i < metrics->size(); ++i) {
    const json& m = (*metrics)[i];
    const std::string field = fmt::format("trainerStatus.metrics[{}]", i);
    if (!m.is_object()) return error(field + ": must be an object with name and value");
    auto name = m.find("name");
    if (name == m.end() || !name->is_string()) return error(field + ".name: required string");
    const std::string& n = name->get_ref<const std::string&>();
    auto rank_in = [&](const auto& names) {
      int r = 0;
      for (const char* candidate : names) {
        if (n == candidate) return r;
        ++r;
      }
      return 99;
    };
    const int as_loss = rank_in(kLossNames), as_epoch = rank_in(kEpochNames);
    if (as_loss == 99 && as_epoch == 99) continue;  // other metrics are not read
    auto value = m.find("value");
    if (value == m.end()) return error(field + ".value: required");
    auto number = metric_number(*value, field + ".value");
    if (!number) return unexpected(number.error());
    if (as_loss < loss_rank) {
      if (!std::isfinite(*number) || *number < 0) {
        return error(fmt::format("{}.value: {} must be a finite number >= 0, got {}", field, n,
                                 value->dump()));
      }
      loss = *number;
      loss_rank = as_loss;
    }
    if (as_epoch < epoch_rank) {
      if (!std::isfinite(*number) || *number < 0 || *number > 1e9) {
        return error(fmt::format("{}.value: {} must be a number of epochs >= 0, got {}", field, n,
                                 value->dump()));
      }
      epoch = *number;
      epoch_rank = as_epoch;
    }
  }
  // An epoch is reported once it is complete: a fractional epoch is the middle of one.
  if (!loss || !epoch || *epoch < 1 || std::floor(*epoch) != *epoch) {
    return std::optional<ProgressReport>();
  }
  ProgressReport report;
  report.phase = *phase;
  report.rank = *rank;
  report.epoch = static_cast<int>(*epoch);
  report.loss = *loss;
  return std::optional<ProgressReport>(report);
}

}  // namespace depl::controller
